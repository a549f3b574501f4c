package traces

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReadErrors(t *testing.T) {
	const tiresiasHeader = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
	const phillyHeader = "timestamp,duration,num_gpus,gpu_time,cluster\n"
	tests := map[string]struct {
		name, content string
		opts          Options
		wantErr       string
		wantLine      int // 0: not a ParseError
	}{
		"invalid integer": {
			name:    "philly.csv",
			content: phillyHeader + "2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 07:01:55,66.0,x,66.0,a\n",
			wantErr: `philly.csv:3: column "num_gpus": invalid integer "x"`, wantLine: 3,
		},
		"a year beyond the range": {
			name:    "philly.csv",
			content: phillyHeader + "2017-10-09 07:01:55,66.0,1,66.0,a\n9999-12-31 00:00:00,66.0,1,66.0,a\n",
			wantErr: `philly.csv:3: column "timestamp": timestamp out of range "9999-12-31 00:00:00" (more than 100 years from 1970)`, wantLine: 3,
		},
		"a year before the range": {
			name:    "philly.csv",
			content: phillyHeader + "0001-01-01 00:00:00,66.0,1,66.0,a\n",
			wantErr: `philly.csv:2: column "timestamp": timestamp out of range "0001-01-01 00:00:00" (more than 100 years from 1970)`, wantLine: 2,
		},
		"a trace spanning more than 100 years": {
			name:    "philly.csv",
			content: phillyHeader + "1900-01-01 00:00:00,66.0,1,66.0,a\n2060-01-01 00:00:00,66.0,1,66.0,a\n",
			wantErr: `philly.csv:3: column "timestamp": submit time 160.1 years after the trace's start exceeds 100 years`, wantLine: 3,
		},
		"a submit time before Options.Start": {
			name:    "philly.csv",
			content: phillyHeader + "2017-10-09 07:01:55,66.0,1,66.0,a\n",
			opts:    Options{Start: time.Date(2017, 10, 9, 8, 0, 0, 0, time.UTC)},
			wantErr: `philly.csv:2: column "timestamp": submit time 58m5s before the trace's start (Options.Start)`, wantLine: 2,
		},
		"philly json year 9999": {
			name:    "log.json",
			content: "[\n{\"jobid\": \"a\", \"submitted_time\": \"9999-01-01 00:00:00\", \"attempts\": []}\n]",
			wantErr: `log.json:2: field "submitted_time": timestamp out of range "9999-01-01 00:00:00" (more than 100 years from 1970)`, wantLine: 2,
		},
		"pickyman negative submit": {
			name:    "p.csv",
			content: strings.Join(pickymanColumns, ",") + "\n" + "a,-1,10,1,1,1,,,,0,low,,m,1,10,1,1,\n",
			wantErr: `p.csv:2: column "submit_s": negative submit time "-1"`, wantLine: 2,
		},
		"invalid timestamp": {
			name:    "philly.csv",
			content: phillyHeader + "2017-13-09 07:01:55,66.0,1,66.0,a\n",
			wantErr: `philly.csv:2: column "timestamp": invalid timestamp "2017-13-09 07:01:55"`, wantLine: 2,
		},
		"zero GPUs": {
			name:    "t.csv",
			content: tiresiasHeader + "0,0,0,606,vgg19,164,30\n",
			wantErr: `t.csv:2: column "num_gpu": GPU count must be positive, got 0`, wantLine: 2,
		},
		"negative GPUs": {
			name:    "t.csv",
			content: tiresiasHeader + "0,-2,0,606,vgg19,164,30\n",
			wantErr: `t.csv:2: column "num_gpu": GPU count must be positive, got -2`, wantLine: 2,
		},
		"negative duration": {
			name:    "b.csv",
			content: "job_id,num_gpus,submit_time,duration,model,batch_size\n1,1,0,-5,m,1\n",
			wantErr: `b.csv:2: column "duration": negative duration "-5"`, wantLine: 2,
		},
		"field count": {
			name:    "t.csv",
			content: tiresiasHeader + "0,1,0,606,vgg19,164,30\n1,2,3\n",
			wantErr: `t.csv:3: expected 7 fields, got 3`, wantLine: 3,
		},
		"empty job id": {
			name:    "t.csv",
			content: tiresiasHeader + ",1,0,606,vgg19,164,30\n",
			wantErr: `t.csv:2: column "job_id": empty job ID`, wantLine: 2,
		},
		"bad quote": {
			name:    "t.csv",
			content: tiresiasHeader + "0,1,0,606,\"vgg19,164,30\n",
			wantErr: `t.csv:2: extraneous or missing " in quoted-field`, wantLine: 2,
		},
		"muri priority": {
			name: "m.csv",
			content: "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,iteration_time,resource_time_0,resource_time_1,resource_time_2,priority\n" +
				"5,4,1500,100,resnet50,64,120000,0,1200,1,2,3,2\n",
			wantErr: `m.csv:2: column "priority": invalid priority "2" (want 0 or 1)`, wantLine: 2,
		},
		"openb qos": {
			name: "pods.csv",
			content: "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
				"p0,12000,16384,1,460,,Gold,Running,10,1010,20\n",
			wantErr: `pods.csv:2: column "qos": unknown qos "Gold" (want LS, Guaranteed, Burstable or BE)`, wantLine: 2,
		},
		"openb deleted before scheduled": {
			name: "pods.csv",
			content: "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
				"p0,12000,16384,1,460,,LS,Running,10,15,20\n",
			wantErr: `pods.csv:2: column "deletion_time": deletion before scheduling (15 < 20)`, wantLine: 2,
		},
		"openb negative GPUs": {
			name: "pods.csv",
			content: "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
				"p0,12000,16384,-1,460,,LS,Running,10,1010,20\n",
			wantErr: `pods.csv:2: column "num_gpu": GPU count must be positive, got -1`, wantLine: 2,
		},
		"helios bad duration": {
			name: "cluster_log.csv",
			content: "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n" +
				"j1,u1,vcA,8,32,1,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:01:00,2020-04-01 01:01:00,1h,50\n",
			wantErr: `cluster_log.csv:2: column "duration": invalid duration "1h"`, wantLine: 2,
		},
		"pai without its task table": {
			name: "pai_job_table.csv", content: "jobA,i,u,Terminated,100,50\n",
			wantErr: "traces: pai_job_table.csv: the PAI job table needs its task table; set Options.PAITaskTable",
		},
		"missing column when forced": {
			name: "x.csv", content: "a,b\n1,2\n", opts: Options{Format: FormatBlox},
			wantErr: `x.csv:1: column "job_id": missing column`, wantLine: 1,
		},
		"philly json bad time": {
			name:    "log.json",
			content: "[\n{\"jobid\": \"a\", \"submitted_time\": \"yesterday\", \"attempts\": []}\n]",
			wantErr: `log.json:2: field "submitted_time": invalid timestamp "yesterday"`, wantLine: 2,
		},
		"philly json wrong type": {
			name:    "log.json",
			content: "[\n{\"jobid\": \"a\", \"submitted_time\": \"2017-10-03 10:00:00\"},\n  {\"jobid\": 7}\n]",
			wantErr: `log.json:3: field "jobid": want a JSON string, got number`, wantLine: 3,
		},
		"philly json attempt ends before it starts": {
			name: "log.json",
			content: `[{"jobid": "a", "submitted_time": "2017-10-03 10:00:00", "attempts": [` +
				`{"start_time": "2017-10-03 10:00:00", "end_time": "2017-10-03 09:00:00"}]}]`,
			wantErr: `log.json:1: field "attempts[0].end_time": end before start (2017-10-03 09:00:00 < 2017-10-03 10:00:00)`, wantLine: 1,
		},
		"philly json not an array": {
			name: "log.json", content: `{"jobid": "a"}`, opts: Options{Format: FormatPhillyJSON},
			wantErr: `log.json:1: want a JSON array of jobs`, wantLine: 1,
		},
		"pickyman workers": {
			name: "p.csv",
			content: strings.Join(pickymanColumns, ",") + "\n" +
				"a,0,10,4,3,1,,,,0,low,,m,1,10,1,1,\n",
			wantErr: `p.csv:2: column "workers": workers x gpus_per_worker (3 x 1) != gpus (4)`, wantLine: 2,
		},
		"unknown format": {
			name: "x.csv", content: "duration\n121\n",
			wantErr: `traces: x.csv: unknown trace format (first line "duration"); tried pickyman, muri, tiresias, philly-json, philly-csv, helios, pai, openb, blox`,
		},
		"cluster file": {
			name: "n32g4.csv", content: "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,32,4,40,256",
			wantErr: `traces: n32g4.csv: a cluster file, not a job trace; pass it as a cluster (ParseCluster)`,
		},
		"pai task table": {
			name: "pai_task_table.csv", content: "jobA,worker,4.0,Terminated,1.0,2.0,600.0,29.3,100.0,V100\n",
			wantErr: `traces: pai_task_table.csv: a PAI pai_task_table; open the pai_job_table beside it`,
		},
		"unknown forced format": {
			name: "x.csv", content: "a\n", opts: Options{Format: "yaml"},
			wantErr: `traces: unknown format "yaml" (formats: [pickyman muri tiresias philly-json philly-csv helios pai openb blox])`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := readRaw(tc.name, tc.content, tc.opts)
			if err == nil {
				t.Fatalf("no error, want %q", tc.wantErr)
			}
			if err.Error() != tc.wantErr {
				t.Errorf("error\n got %q\nwant %q", err, tc.wantErr)
			}
			var pe *ParseError
			if got := errors.As(err, &pe); got != (tc.wantLine != 0) {
				t.Fatalf("ParseError = %v, want %v", got, tc.wantLine != 0)
			}
			if pe != nil && pe.Line != tc.wantLine {
				t.Errorf("line = %d, want %d", pe.Line, tc.wantLine)
			}
		})
	}
}
