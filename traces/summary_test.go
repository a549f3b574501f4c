package traces

import (
	"bytes"
	"testing"
)

func TestSummarize(t *testing.T) {
	const trace = "job_id,num_gpus,submit_time,duration,model,batch_size\n" +
		"1,1,0,100,resnet50,64\n2,1,10,200,resnet50,64\n3,4,20,300,x,1\n4,2,3600,400,y,1\n5,1,50,0,z,1\n"
	r, err := newReader(bytes.NewReader([]byte(trace)), "blox.csv", "", Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(r)
	if err != nil {
		t.Fatal(err)
	}
	if s.Jobs != 4 || s.Skipped != 1 || s.P50 != 200*sec || s.P90 != 400*sec || s.Max != 400*sec || s.Mean != 250*sec {
		t.Errorf("summary = %+v", s)
	}
	if diff := cmpDiff(map[int32]int{1: 2, 2: 1, 4: 1}, s.GPUMix); diff != "" {
		t.Errorf("GPU mix (-want +got):\n%s", diff)
	}
	if s.GPUSeconds != 100+200+1200+800 || s.LastSubmit != 3600*sec {
		t.Errorf("GPU-seconds %v, last submit %v", s.GPUSeconds, s.LastSubmit)
	}
	if got := s.Synthesized[FieldModel]; got != 0 {
		t.Errorf("model synthesized for %d jobs, want 0", got)
	}
	if got := s.Synthesized[FieldEpochs]; got != 4 {
		t.Errorf("epochs synthesized for %d jobs, want 4", got)
	}
	var out bytes.Buffer
	if err := s.Write(&out, 8); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"format            blox", "jobs              4 (skipped 1)",
		"GPU demand        1:2 (50.0%)  2:1 (25.0%)  4:1 (25.0%)", "offered load      0.080 of 8 GPUs"} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCollectSortsByArrival(t *testing.T) {
	const trace = "job_id,num_gpus,submit_time,duration,model,batch_size\n" +
		"a,1,30,100,m,1\nb,1,10,100,m,1\nc,1,30,100,m,1\nd,1,0,100,m,1\n"
	r, err := newReader(bytes.NewReader([]byte(trace)), "blox.csv", "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := Collect(r)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	if diff := cmpDiff([]string{"d", "b", "a", "c"}, ids); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
