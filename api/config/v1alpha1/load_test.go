package v1alpha1

import (
	"strings"
	"testing"
	"time"
)

var policies = []string{"fifo", "pickyman"}

func TestParse(t *testing.T) {
	cases := map[string]struct {
		in      string
		wantErr string
		check   func(t *testing.T, c *Configuration)
	}{
		"empty file gets every default": {
			in: "",
			check: func(t *testing.T, c *Configuration) {
				if c.Policy.Name != "pickyman" || len(c.Queues) != 1 || c.Queues[0].Name != "default" {
					t.Errorf("defaults: policy %q queues %v", c.Policy.Name, c.Queues)
				}
				if c.Overhead.GracePeriod.Duration != 30*time.Second || c.GPUResource != "nvidia.com/gpu" {
					t.Errorf("overhead defaults: %+v %q", c.Overhead, c.GPUResource)
				}
				if c.Manager.LeaderElection == nil || !*c.Manager.LeaderElection {
					t.Errorf("leader election defaults to %v, want on", c.Manager.LeaderElection)
				}
			},
		},
		"leader election can be turned off": {
			in: "manager: {leaderElection: false}\n",
			check: func(t *testing.T, c *Configuration) {
				if c.Manager.LeaderElection == nil || *c.Manager.LeaderElection {
					t.Errorf("leaderElection false read as %v", c.Manager.LeaderElection)
				}
			},
		},
		"explicit values are kept": {
			in: "policy: {name: fifo}\nqueues: [{name: research, priority: 5}]\nscheduleInterval: 3s\n",
			check: func(t *testing.T, c *Configuration) {
				if c.Policy.Name != "fifo" || c.Queues[0].Priority != 5 || c.ScheduleInterval.Duration != 3*time.Second {
					t.Errorf("got %+v", c)
				}
			},
		},
		"unknown field":        {in: "polcy: {name: fifo}\n", wantErr: `unknown field "polcy"`},
		"unknown policy":       {in: "policy: {name: lottery}\n", wantErr: `policy.name: Unsupported value: "lottery"`},
		"duplicate queue":      {in: "queues: [{name: a}, {name: a}]\n", wantErr: `queues[1].name: Duplicate value: "a"`},
		"bad queue name":       {in: "queues: [{name: A_B}]\n", wantErr: `queues[0].name: Invalid value: "A_B"`},
		"negative bandwidth":   {in: "overhead: {readBytesPerSecond: -1}\n", wantErr: "overhead.readBytesPerSecond: Invalid value: -1: must be positive"},
		"negative preemptions": {in: "protection: {maxPreemptions: -2}\n", wantErr: "protection.maxPreemptions"},
		"wrong kind":           {in: "kind: Pod\n", wantErr: `kind "Pod"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := Parse("cfg.yaml", []byte(tc.in), policies)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "cfg.yaml: ") {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}
