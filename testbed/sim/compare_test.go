package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/sim/simtest"
)

func TestComparison(t *testing.T) {
	factory := func(name string) (sched.Policy, error) {
		switch name {
		case "fifo":
			return simtest.NewFIFO(), nil
		case "now":
			return simtest.NewPriority(sched.SuspendNow), nil
		case "broken":
			return &simtest.Func{PolicyName: "broken", F: func(s *sched.Snapshot) sched.Decisions {
				return sched.Decisions{Preemptions: []sched.Preemption{{JobID: "nope", Mode: sched.SuspendNow}}}
			}}, nil
		}
		return nil, fmt.Errorf("unknown policy %q", name)
	}
	c, err := NewComparison(simtest.Cluster(1, 4), twoJobs(), []string{"fifo", "now"}, factory, handConfig())
	if err != nil {
		t.Fatal(err)
	}
	runs, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var finishes []float64
	for _, r := range runs {
		finishes = append(finishes, r.Jobs[0].Finish.Seconds(), r.Jobs[1].Finish.Seconds())
	}
	// The same runs as TestEngineHandTraces' "fifo waits" and "preempt now", in order.
	if diff := cmp.Diff([]float64{115, 180, 228, 132}, finishes); diff != "" {
		t.Errorf("finish times (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{1, 1}, c.Progress()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}

	bad, err := NewComparison(simtest.Cluster(1, 4), twoJobs(), []string{"fifo", "broken"}, factory, handConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "broken") || !strings.Contains(err.Error(), "nope") {
		t.Errorf("error %v, want one naming the broken policy and its unknown job", err)
	}
	if _, err := NewComparison(simtest.Cluster(1, 4), twoJobs(), []string{"missing"}, factory, handConfig()); err == nil {
		t.Error("unknown policy accepted")
	}
}
