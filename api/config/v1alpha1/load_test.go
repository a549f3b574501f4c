package v1alpha1

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// policies stands in for the policy registry's Validate: it knows fifo and pickyman.
func policies(p Policy, path *field.Path) field.ErrorList {
	known := []string{"fifo", "pickyman"}
	if !slices.Contains(known, p.Name) {
		return field.ErrorList{field.NotSupported(path.Child("name"), p.Name, known)}
	}
	return append(ValidateFIFOArgs(p.FIFO, path.Child("fifo")), ValidatePickyManArgs(p.PickyMan, path.Child("pickyman"))...)
}

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
		"typed policy arguments": {
			in: "policy: {name: pickyman, pickyman: {aging: 0.25, promote: 0s, refresh: 2m, queueWait: true, smoothing: ewma}}\n",
			check: func(t *testing.T, c *Configuration) {
				a := c.Policy.PickyMan
				if a == nil || *a.Aging != 0.25 || a.Promote.Duration != 0 || a.Refresh.Duration != 2*time.Minute || !*a.QueueWait || a.Smoothing != "ewma" {
					t.Errorf("pickyman arguments read as %+v", a)
				}
			},
		},
		"unknown policy argument": {in: "policy: {name: pickyman, pickyman: {agin: 1}}\n", wantErr: `unknown field "agin"`},
		"bad policy argument":     {in: "policy: {name: pickyman, pickyman: {gain: 0}}\n", wantErr: "policy.pickyman.gain: Invalid value: 0: must be positive"},
		"bad smoothing":           {in: "policy: {name: pickyman, pickyman: {smoothing: mean}}\n", wantErr: `policy.pickyman.smoothing: Unsupported value: "mean"`},
		"unparsable duration":     {in: "policy: {name: pickyman, pickyman: {refresh: soon}}\n", wantErr: `invalid duration "soon"`},
		"unknown field":           {in: "polcy: {name: fifo}\n", wantErr: `unknown field "polcy"`},
		"unknown policy":          {in: "policy: {name: lottery}\n", wantErr: `policy.name: Unsupported value: "lottery"`},
		"duplicate queue":         {in: "queues: [{name: a}, {name: a}]\n", wantErr: `queues[1].name: Duplicate value: "a"`},
		"bad queue name":          {in: "queues: [{name: A_B}]\n", wantErr: `queues[0].name: Invalid value: "A_B"`},
		"bad queue namespace":     {in: "queues: [{name: a, namespaces: [team_a]}]\n", wantErr: `queues[0].namespaces[0]: Invalid value: "team_a"`},
		"duplicate namespace":     {in: "queues: [{name: a, namespaces: [x, x]}]\n", wantErr: `queues[0].namespaces[1]: Duplicate value: "x"`},
		"negative bandwidth":      {in: "overhead: {readBytesPerSecond: -1}\n", wantErr: "overhead.readBytesPerSecond: Invalid value: -1: must be positive"},
		"negative preemptions":    {in: "protection: {maxPreemptions: -2}\n", wantErr: "protection.maxPreemptions"},
		"client connection defaults": {
			in: "",
			check: func(t *testing.T, c *Configuration) {
				if c.ClientConnection.QPS != 100 || c.ClientConnection.Burst != 200 || c.WriteConcurrency != 8 || c.JobConcurrency != 16 {
					t.Errorf("client connection %+v, write concurrency %d, job concurrency %d; want 100/200, 8, 16", c.ClientConnection, c.WriteConcurrency, c.JobConcurrency)
				}
			},
		},
		"bad qps":               {in: "clientConnection: {qps: -1}\n", wantErr: "clientConnection.qps: Invalid value: -1: must be positive"},
		"bad write concurrency": {in: "writeConcurrency: -3\n", wantErr: "writeConcurrency: Invalid value: -3"},
		"bad job concurrency":   {in: "jobConcurrency: -1\n", wantErr: "jobConcurrency: Invalid value: -1: must be at least 1"},
		"wrong kind":            {in: "kind: Pod\n", wantErr: `kind "Pod"`},
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

func TestValidateTiresiasArgs(t *testing.T) {
	cases := map[string]struct {
		in      string
		wantErr string
	}{
		"good":           {in: "thresholds: [1h, 10h]\nstarveLimit: 8\n"},
		"not increasing": {in: "thresholds: [1h, 1m]\n", wantErr: "args.thresholds[1]: Invalid value: \"1m0s\": must be greater"},
		"not positive":   {in: "thresholds: [0s]\n", wantErr: "args.thresholds[0]: Invalid value: \"0s\": must be positive"},
		"negative limit": {in: "starveLimit: -1\n", wantErr: "args.starveLimit"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := &TiresiasArgs{}
			if err := yaml.UnmarshalStrict([]byte(tc.in), a); err != nil {
				t.Fatal(err)
			}
			err := ValidateTiresiasArgs(a, field.NewPath("args")).ToAggregate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("valid arguments refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
