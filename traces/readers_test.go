package traces

import (
	"testing"
	"time"
)

func TestReaders(t *testing.T) {
	tests := map[string]struct {
		name        string
		content     string
		opts        Options
		wantFormat  Format
		want        []Job
		wantSkipped int
	}{
		"tiresias": {
			name: "t.csv",
			content: "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n" +
				"0,1,0,606,vgg19,164,30\n" +
				"1,8,30,133,vgg11,147,23\n" +
				"2,2,53,157,inception4,0,26\n",
			wantFormat: FormatTiresias,
			want: []Job{
				job("0").gpus(1).submit(0).dur(164 * sec).model("vgg19").line(2).obj(),
				job("1").gpus(8).submit(30 * sec).dur(147 * sec).model("vgg11").line(3).obj(),
			},
			wantSkipped: 1, // zero duration
		},
		"muri in milliseconds with priority": {
			name: "m.csv",
			content: "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,iteration_time,resource_time_0,resource_time_1,resource_time_2,priority\n" +
				"5,4,1500,100,resnet50,64,120000,0,1200,1,2,3,1\n" +
				"6,1,500,100,bert,32,2500,0,25,1,2,3,0\n",
			wantFormat: FormatMuri,
			want: []Job{
				job("6").gpus(1).submit(500*time.Millisecond).dur(2500*time.Millisecond).model("bert").prio(0, "low").line(3).obj(),
				job("5").gpus(4).submit(1500*time.Millisecond).dur(120*sec).model("resnet50").prio(1, "high").line(2).obj(),
			},
		},
		"philly csv unsorted, counted from the earliest timestamp": {
			name: "philly.csv",
			content: "timestamp,duration,num_gpus,gpu_time,cluster\n" +
				"2017-10-09 07:01:55,66.0,1,66.0,11cb48\n" +
				"2017-10-09 06:13:03,2951.5,2,5903.0,6214e9\n" +
				"2017-10-09 06:13:03,0.0,2,0.0,6214e9\n" +
				"\n",
			wantFormat: FormatPhillyCSV,
			want: []Job{
				job("L3").gpus(2).submit(0).dur(2951500 * time.Millisecond).queue("6214e9").line(3).obj(),
				job("L2").gpus(1).submit(48*time.Minute + 52*sec).dur(66 * sec).queue("11cb48").line(2).obj(),
			},
			wantSkipped: 1,
		},
		"philly csv with a given start": {
			name: "philly.csv",
			content: "timestamp,duration,num_gpus,gpu_time,cluster\n" +
				"2017-10-09 07:00:00,66.0,1,66.0,a\n",
			opts:       Options{Start: time.Date(2017, 10, 9, 6, 0, 0, 0, time.UTC)},
			wantFormat: FormatPhillyCSV,
			want:       []Job{job("L2").gpus(1).submit(time.Hour).dur(66 * sec).queue("a").line(2).obj()},
		},
		"helios skips CPU jobs and takes node_num as workers": {
			name: "cluster_log.csv",
			content: "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n" +
				"j1,u1,vcA,x,16,32,2,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:01:00,2020-04-01 01:01:00,3600,50\n" +
				"j2,u2,vcB,y,0,4,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 00:10:00,600,0\n" +
				"j3,u2,vcB,z,3,4,2,FAILED,2020-04-01 00:00:20,2020-04-01 00:00:30,2020-04-01 00:00:40,10,10\n",
			wantFormat: FormatHelios,
			want: []Job{
				job("j1").gpus(16).workers(2, 8).submit(0).dur(3600 * sec).user("u1").queue("vcA").status("COMPLETED").line(2).obj(),
				job("j3").gpus(3).submit(10 * sec).dur(10 * sec).user("u2").queue("vcB").status("FAILED").line(4).obj(),
			},
			wantSkipped: 1,
		},
		"openb skips CPU and unscheduled pods, rounds GPU shares up": {
			name: "pods.csv",
			content: "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
				"p0,12000,16384,1,460,,LS,Running,10,1010,20\n" +
				"p1,12000,16384,8,1000,V100M32,BE,Succeeded,30,2030,30\n" +
				"p2,6000,12288,0,0,,Burstable,Running,40,90,40\n" +
				"p3,11908,47104,1,1000,,BE,Pending,50,60,\n" +
				"p4,6000,12288,2,1000,,Guaranteed,Failed,5,500,100\n",
			wantFormat: FormatOpenB,
			want: []Job{
				job("p4").gpus(2).workers(1, 2).submit(5*sec).dur(400*sec).prio(1, "Guaranteed").status("Failed").line(6).obj(),
				job("p0").gpus(1).workers(1, 1).submit(10*sec).dur(990*sec).prio(1, "LS").status("Running").line(2).obj(),
				job("p1").gpus(8).workers(1, 8).submit(30*sec).dur(2000*sec).prio(0, "BE").gpuModel("V100M32").status("Succeeded").line(3).obj(),
			},
			wantSkipped: 2,
		},
		"blox": {
			name: "blox.csv",
			content: "job_id,num_gpus,submit_time,duration,model,batch_size\n" +
				"1,1,12,9447,resnet50,64\n" +
				"6,4,143,7527,GPT2-Medium,32\n",
			wantFormat: FormatBlox,
			want: []Job{
				job("1").gpus(1).submit(12 * sec).dur(9447 * sec).model("resnet50").line(2).obj(),
				job("6").gpus(4).submit(143 * sec).dur(7527 * sec).model("GPT2-Medium").line(3).obj(),
			},
		},
		"philly json": {
			name:       "cluster_job_log",
			content:    phillyJSONSample,
			wantFormat: FormatPhillyJSON,
			want: []Job{
				job("application_3").gpus(1).workers(1, 1).submit(0).dur(60 * sec).user("u2").queue("vc2").status("Killed").line(14).obj(),
				job("application_1").gpus(4).workers(2, 2).submit(time.Hour).dur(10 * time.Minute).user("u1").queue("vc1").status("Pass").line(2).obj(),
			},
			wantSkipped: 2,
		},
		"forced format": {
			name:       "x.csv",
			content:    "job_id,num_gpus,submit_time,duration,model,batch_size\n1,1,0,5,m,1\n",
			opts:       Options{Format: FormatBlox},
			wantFormat: FormatBlox,
			want:       []Job{job("1").gpus(1).dur(5 * sec).model("m").line(2).obj()},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := newReader(bytesReader(tc.content), tc.name, "", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.Format() != tc.wantFormat {
				t.Errorf("format = %s, want %s", r.Format(), tc.wantFormat)
			}
			got, skipped, err := readRaw(tc.name, tc.content, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmpDiff(tc.want, got); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
			if skipped != tc.wantSkipped {
				t.Errorf("skipped = %d, want %d", skipped, tc.wantSkipped)
			}
		})
	}
}

const phillyJSONSample = `[
  {"jobid": "application_1", "user": "u1", "vc": "vc1", "status": "Pass",
   "submitted_time": "2017-10-03 10:00:00",
   "attempts": [
     {"start_time": "2017-10-03 10:00:10", "end_time": "2017-10-03 10:10:10",
      "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}, {"ip": "m2", "gpus": ["gpu0", "gpu1"]}]}
   ]},
  {"jobid": "application_2", "user": "u1", "vc": "vc1", "status": "Killed",
   "submitted_time": "2017-10-03 08:00:00", "attempts": []},
  {"jobid": "application_4", "user": "u1", "vc": "vc1", "status": "Failed",
   "submitted_time": "2017-10-03 08:30:00",
   "attempts": [{"start_time": "2017-10-03 08:31:00", "end_time": "None",
     "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}]},
  {"jobid": "application_3", "user": "u2", "vc": "vc2", "status": "Killed",
   "submitted_time": "2017-10-03 09:00:00",
   "attempts": [
     {"start_time": "2017-10-03 09:01:00", "end_time": "2017-10-03 09:02:00",
      "detail": [{"ip": "m3", "gpus": ["gpu0"]}]},
     {"start_time": "2017-10-03 09:05:00", "end_time": null,
      "detail": [{"ip": "m4", "gpus": ["gpu3"]}]}
   ]}
]
`

func TestPAIReadsTheTaskTableBeside(t *testing.T) {
	files := map[string]string{
		"pai_job_table.csv": "jobA,inst1,userX,Terminated,1584658681.0,1584662281.0\n" +
			"jobB,inst2,userY,Terminated,1584658600,1584658700\n" +
			"jobC,inst3,userY,Running,1584658600,\n" +
			"jobD,inst4,userZ,Terminated,1584658000,1584659000\n",
		"pai_task_table.csv": "jobA,worker,4.0,Terminated,1584658681.0,1584662281.0,600.0,29.3,100.0,V100\n" +
			"jobA,ps,1.0,Terminated,1584658681.0,1584662281.0,600.0,29.3,,\n" +
			"jobB,tensorflow,1.0,Terminated,1584658600,1584658700,600.0,29.3,50.0,MISC\n" +
			"jobC,tensorflow,1.0,Running,1584658600,,600.0,29.3,100.0,T4\n" +
			"jobD,tensorflow,1.0,Terminated,1584658000,1584659000,600.0,29.3,,\n",
	}
	got, skipped, err := readRawFiles(t, files, "pai_job_table.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		job("jobB").gpus(1).workers(1, 1).submit(0).dur(100 * sec).user("userY").status("Terminated").gpuModel("MISC").line(2).obj(),
		job("jobA").gpus(4).workers(4, 1).submit(81 * sec).dur(3600 * sec).user("userX").status("Terminated").gpuModel("V100").line(1).obj(),
	}
	if diff := cmpDiff(want, got); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	if skipped != 2 { // jobC never ended, jobD asks no GPU
		t.Errorf("skipped = %d, want 2", skipped)
	}

	files["pai_job_table.csv"] = "jobA,inst1,userX,Terminated,1584662281,1584658681\n"
	_, _, err = readRawFiles(t, files, "pai_job_table.csv", Options{})
	if want := `pai_job_table.csv:1: column "end_time": end before start (1584658681 < 1584662281)`; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}

	delete(files, "pai_task_table.csv")
	if _, _, err := readRawFiles(t, files, "pai_job_table.csv", Options{}); err == nil {
		t.Error("no error without the task table")
	}
}
