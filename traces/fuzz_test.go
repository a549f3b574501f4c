package traces

import (
	"bytes"
	"strings"
	"testing"
)

// fuzzFormat feeds arbitrary bytes to the reader of one format: it must return jobs or an
// error, never panic, and every job it returns must satisfy the record invariants.
func fuzzFormat(f *testing.F, format Format, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := newReader(bytes.NewReader(data), "fuzz", "", Options{Format: format, Seed: 3})
		if err != nil {
			return
		}
		for {
			j, err := r.Next()
			if err != nil {
				return
			}
			if j.Submit < 0 || j.Submit > maxDuration || j.Duration < 0 || j.Duration > maxDuration {
				t.Fatalf("job %s line %d: submit %v, duration %v: want both in [0, %v]", j.ID, j.Line, j.Submit, j.Duration, maxDuration)
			}
			if format != FormatPickyman {
				checkInvariants(t, j)
			}
		}
	})
}

func FuzzTiresias(f *testing.F) {
	fuzzFormat(f, FormatTiresias,
		"job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,606,vgg19,164,30\n1,8,30,133,vgg11,147,23\n",
		"job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0.5,606,,1e300,30\n")
}

func FuzzMuri(f *testing.F) {
	fuzzFormat(f, FormatMuri,
		"job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,iteration_time,resource_time_0,resource_time_1,resource_time_2,priority\n5,4,1500,100,resnet50,64,120000,0,1200,1,2,3,1\n")
}

func FuzzPhillyCSV(f *testing.F) {
	fuzzFormat(f, FormatPhillyCSV,
		"timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,11cb48\n2017-10-09 06:13:03,2951.5,2,5903.0,6214e9\n",
		"timestamp,duration,num_gpus,gpu_time,cluster\n1507532515,0.5,1,66.0,a\n")
}

func FuzzPhillyJSON(f *testing.F) {
	fuzzFormat(f, FormatPhillyJSON, phillyJSONSample, "[]", `[{"jobid":"a","submitted_time":"2017-10-03 10:00:00","attempts":[{"start_time":"2017-10-03 10:00:00","end_time":"2017-10-03 10:00:00.5"}]}]`)
}

func FuzzHelios(f *testing.F) {
	fuzzFormat(f, FormatHelios,
		"job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"+
			"j1,u1,vcA,16,32,2,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:01:00,2020-04-01 01:01:00,3600,50\n"+
			"j3,u2,vcB,3,4,2,FAILED,1585699220,1585699230,1585699240,10,10\n")
}

func FuzzOpenB(f *testing.F) {
	fuzzFormat(f, FormatOpenB,
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
			"p0,12000,16384,1,460,,LS,Running,10,1010,20\np1,12000,16384,8,1000,V100M32,BE,Succeeded,30,2030,30\n"+
			"p3,11908,47104,1,1000,,BE,Pending,50,60,\n")
}

func FuzzBlox(f *testing.F) {
	fuzzFormat(f, FormatBlox, "job_id,num_gpus,submit_time,duration,model,batch_size\n1,1,12,9447,resnet50,64\n6,4,143,7527,GPT2-Medium,32\n")
}

func FuzzPickyman(f *testing.F) {
	var b strings.Builder
	if err := WriteCSV(&b, Generate(GenerateConfig{Jobs: 3, Seed: 2})); err != nil {
		f.Fatal(err)
	}
	fuzzFormat(f, FormatPickyman, b.String())
}

// FuzzPAI splits its input at the first NUL into the job table and the task table.
func FuzzPAI(f *testing.F) {
	f.Add([]byte("jobA,inst1,userX,Terminated,1584658681.0,1584662281.0\njobB,i,u,Terminated,1,2\n\x00" +
		"jobA,worker,4.0,Terminated,1584658681.0,1584662281.0,600.0,29.3,100.0,V100\njobB,w,1,T,1,2,1,1,250,MISC\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, tasks, _ := bytes.Cut(data, []byte{0})
		demand, err := readPAITasks(bytes.NewReader(tasks), "tasks")
		if err != nil {
			return
		}
		r, err := startReader(bytes.NewReader(jobs), "jobs", FormatPAI, csvOpener(paiFormat(demand)), true, Options{})
		if err != nil {
			return
		}
		for {
			j, err := r.Next()
			if err != nil {
				return
			}
			checkInvariants(t, j)
		}
	})
}

// FuzzDetect runs format detection and whatever reader it picks.
func FuzzDetect(f *testing.F) {
	f.Add([]byte("job_id,num_gpus,submit_time,duration,model,batch_size\n1,1,12,9447,resnet50,64\n"))
	f.Add([]byte(phillyJSONSample))
	f.Add([]byte("jobA,inst1,userX,Terminated,1584658681.0,1584662281.0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := newReader(bytes.NewReader(data), "fuzz", "", Options{})
		if err != nil {
			return
		}
		_ = drain(r)
	})
}

func FuzzParseCluster(f *testing.F) {
	f.Add("32x8:V100,16x4:P100", []byte("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\n"))
	f.Add("4x8", []byte("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,32,4,40,256"))
	f.Add("1x1", []byte("machineId,number of GPUs,single GPU mem\nm1,8,24GB\n"))
	f.Fuzz(func(t *testing.T, spec string, file []byte) {
		if c, err := ParseCluster(spec); err == nil && c.GPUs() <= 0 {
			t.Fatalf("cluster %q has no GPUs", spec)
		}
		if c, err := parseClusterFile(bytes.NewReader(file), "fuzz", "fuzz"); err == nil && c.GPUs() <= 0 {
			t.Fatalf("cluster file has no GPUs")
		}
	})
}
