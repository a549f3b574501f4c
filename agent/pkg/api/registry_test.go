package api

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/pickyman/pickyman/agent/pkg/protocol"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// recorder is a Hooks that keeps what it is told.
type recorder struct {
	mu     sync.Mutex
	acks   []agentv1alpha1.CheckpointAck
	epochs []agentv1alpha1.Progress
}

func (r *recorder) Acked(_ Pod, a agentv1alpha1.CheckpointAck) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks = append(r.acks, a)
}

func (r *recorder) EpochEnded(_ Pod, p agentv1alpha1.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.epochs = append(r.epochs, p)
}

// podBuilder builds Pod values.
type podBuilder struct{ p Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{Pod{UID: "uid-" + name, Namespace: "ns", Name: name}}
}
func (b *podBuilder) resume(e int32) *podBuilder {
	b.p.Resume = agentv1alpha1.ResumePoint{Epoch: e, Path: "/ck"}
	return b
}
func (b *podBuilder) request(id string, m agentv1alpha1.Mode) *podBuilder {
	b.p.Request = &agentv1alpha1.CheckpointRequest{ID: id, Mode: m, Deadline: t0.Add(time.Minute)}
	return b
}
func (b *podBuilder) acked(id string) *podBuilder { b.p.AckedID = id; return b }
func (b *podBuilder) obj() Pod                    { return b.p }

// step is one call on the registry by a session.
type step struct {
	session uint64
	pod     string // the caller's pod UID, "uid-a" if empty
	call    func(r *Registry, c Caller) error
	want    protocol.ErrorCode // "" for success
}

func register(pod string, rank, world int32) func(*Registry, Caller) error {
	return func(r *Registry, c Caller) error { _, err := r.Register(c, pod, rank, world); return err }
}
func begin(e int32) func(*Registry, Caller) error {
	return func(r *Registry, c Caller) error { return r.EpochBegin(c, e) }
}
func end(e int32) func(*Registry, Caller) error {
	return func(r *Registry, c Caller) error { return r.EpochEnd(c, e, 100, 1000) }
}
func done(id string, e int32) func(*Registry, Caller) error {
	return func(r *Registry, c Caller) error { return r.CheckpointDone(c, id, e, "/ck/e", 10, 0.5) }
}
func wantPoll(id string) func(*Registry, Caller) error {
	return func(r *Registry, c Caller) error {
		req, err := r.Poll(context.Background(), c, 0)
		if err != nil {
			return err
		}
		got := ""
		if req != nil {
			got = req.ID
		}
		if got != id {
			return errors.New("poll returned " + got + ", want " + id)
		}
		return nil
	}
}

func TestRegistrySequences(t *testing.T) {
	tests := map[string]struct {
		pods     []Pod
		steps    []step
		wantAcks []agentv1alpha1.CheckpointAck
	}{
		"boundary checkpoint with two ranks": {
			pods: []Pod{makePod("a").request("r1", agentv1alpha1.ModeBoundary).obj()},
			steps: []step{
				{session: 1, call: register("ns/a", 0, 2)},
				{session: 2, call: register("ns/a", 1, 2)},
				{session: 1, call: begin(0)},
				{session: 2, call: begin(0)},
				{session: 1, call: wantPoll("r1")},
				{session: 1, call: done("r1", 0), want: protocol.ErrOutOfOrder}, // inside the epoch
				{session: 1, call: end(0)},
				{session: 2, call: end(0)},
				{session: 1, call: done("r1", 0), want: protocol.ErrOutOfOrder}, // epoch 0 is done: resume from 1
				{session: 1, call: done("r2", 1), want: protocol.ErrOutOfOrder}, // wrong id
				{session: 1, call: done("r1", 1)},
				{session: 1, call: done("r1", 1), want: protocol.ErrOutOfOrder}, // twice
				{session: 1, call: wantPoll("")},                                // reported: nothing pending for it
				{session: 2, call: wantPoll("r1")},
				{session: 2, call: done("r1", 1)},
				{session: 2, call: wantPoll("")},
			},
			wantAcks: []agentv1alpha1.CheckpointAck{{RequestID: "r1", Epoch: 1, Path: "/ck/e", Bytes: 20, Seconds: 0.5}},
		},
		"now checkpoint inside an epoch resumes at its start": {
			pods: []Pod{makePod("a").resume(3).request("r1", agentv1alpha1.ModeNow).obj()},
			steps: []step{
				{session: 1, call: register("ns/a", 0, 1)},
				{session: 1, call: begin(0), want: protocol.ErrOutOfOrder}, // resume point is 3
				{session: 1, call: begin(3)},
				{session: 1, call: done("r1", 3)},
			},
			wantAcks: []agentv1alpha1.CheckpointAck{{RequestID: "r1", Epoch: 3, Path: "/ck/e", Bytes: 10, Seconds: 0.5}},
		},
		"calls before register": {
			pods: []Pod{makePod("a").obj()},
			steps: []step{
				{session: 1, call: begin(0), want: protocol.ErrOutOfOrder},
				{session: 1, call: wantPoll(""), want: protocol.ErrOutOfOrder},
				{session: 1, call: register("ns/a", 0, 1)},
				{session: 1, call: register("ns/a", 0, 1), want: protocol.ErrOutOfOrder},
			},
		},
		"register validation": {
			pods: []Pod{makePod("a").obj(), makePod("b").obj()},
			steps: []step{
				{session: 1, call: register("ns/b", 0, 1), want: protocol.ErrForbidden},                // a's process names b
				{session: 1, pod: "uid-x", call: register("ns/x", 0, 1), want: protocol.ErrUnknownPod}, // not on this node
				{session: 1, call: register("ns/a", 2, 2), want: protocol.ErrMalformed},
				{session: 1, call: register("ns/a", 0, 0), want: protocol.ErrMalformed},
				{session: 1, call: register("ns/a", 0, 2)},
				{session: 2, call: register("ns/a", 1, 3), want: protocol.ErrMalformed},  // world differs
				{session: 3, call: register("ns/a", 0, 2), want: protocol.ErrOutOfOrder}, // rank taken
			},
		},
		"epoch order": {
			pods: []Pod{makePod("a").obj()},
			steps: []step{
				{session: 1, call: register("ns/a", 0, 1)},
				{session: 1, call: end(0), want: protocol.ErrOutOfOrder},
				{session: 1, call: begin(1), want: protocol.ErrOutOfOrder},
				{session: 1, call: begin(0)},
				{session: 1, call: begin(1), want: protocol.ErrOutOfOrder},
				{session: 1, call: end(1), want: protocol.ErrOutOfOrder},
				{session: 1, call: end(0)},
				{session: 1, call: begin(1)},
			},
		},
		"no request pending": {
			pods: []Pod{makePod("a").obj()},
			steps: []step{
				{session: 1, call: register("ns/a", 0, 1)},
				{session: 1, call: wantPoll("")},
				{session: 1, call: done("r1", 0), want: protocol.ErrOutOfOrder},
			},
		},
		"an acknowledged request is not forwarded again": {
			pods: []Pod{makePod("a").request("r1", agentv1alpha1.ModeBoundary).acked("r1").obj()},
			steps: []step{
				{session: 1, call: register("ns/a", 0, 1)},
				{session: 1, call: wantPoll("")},
				{session: 1, call: done("r1", 0), want: protocol.ErrOutOfOrder},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			r := NewRegistry(clocktesting.NewFakeClock(t0), rec)
			for _, p := range tc.pods {
				r.SetPod(p)
			}
			for i, s := range tc.steps {
				uid := s.pod
				if uid == "" {
					uid = "uid-a"
				}
				err := s.call(r, Caller{Session: s.session, PID: 100 + int32(s.session), PodUID: uid})
				var code protocol.ErrorCode
				var e *Error
				switch {
				case errors.As(err, &e):
					code = e.Code
				case err != nil:
					t.Fatalf("step %d: %v", i, err)
				}
				if code != s.want {
					t.Fatalf("step %d: error %v, want code %q", i, err, s.want)
				}
			}
			// SuspendSeconds and Time depend on the clock; the fake clock does not move.
			for i := range rec.acks {
				rec.acks[i].Time = time.Time{}
			}
			if diff := cmp.Diff(tc.wantAcks, rec.acks); diff != "" {
				t.Errorf("acks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegistrySuspendDelayAndProgress(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rec := &recorder{}
	r := NewRegistry(clk, rec)
	r.SetPod(makePod("a").obj())
	c := Caller{Session: 1, PID: 7, PodUID: "uid-a"}
	if _, err := r.Register(c, "ns/a", 0, 1); err != nil {
		t.Fatal(err)
	}
	for e := int32(0); e < 2; e++ {
		if err := r.EpochBegin(c, e); err != nil {
			t.Fatal(err)
		}
		clk.Step(30 * time.Second)
		if err := r.EpochEnd(c, e, 500, 3e9); err != nil {
			t.Fatal(err)
		}
	}
	// Counters: 100 MB/s for 10 s.
	var n int64
	for i := 0; i <= 10; i++ {
		r.SampleTraffic(func(pid int) (int64, error) {
			if pid != 7 {
				t.Errorf("sampled pid %d, want 7", pid)
			}
			return n, nil
		})
		n += 100e6
		clk.Step(time.Second)
	}
	_ = r.EpochBegin(c, 2)
	clk.Step(12 * time.Second)
	r.SetPod(makePod("a").request("r1", agentv1alpha1.ModeBoundary).obj())
	clk.Step(18 * time.Second)
	_ = r.EpochEnd(c, 2, 500, 3e9)
	clk.Step(2 * time.Second)
	if err := r.CheckpointDone(c, "r1", 3, "/ck/3", 1e9, 2); err != nil {
		t.Fatal(err)
	}
	if len(rec.acks) != 1 || rec.acks[0].SuspendSeconds != 20 {
		t.Fatalf("acks %+v, want one with a 20 s suspend delay", rec.acks)
	}
	got, ok := r.Progress("uid-a")
	if !ok {
		t.Fatal("no progress")
	}
	want := agentv1alpha1.Progress{Epoch: 2, EpochsDone: 3, EpochSeconds: 30, ReadBytes: 9e9, ReadRate: 100e6, Time: clk.Now()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if len(rec.epochs) != 3 || rec.epochs[2].EpochsDone != 3 {
		t.Errorf("epoch hooks %+v, want 3 ending with 3 done", rec.epochs)
	}
}

// TestRegisterGivesResumeSizes: register and resume_point return the pod's resume point
// with an elastic job's world size and reference size; a pod without them gets zeros.
func TestRegisterGivesResumeSizes(t *testing.T) {
	tests := map[string]agentv1alpha1.ResumePoint{
		"elastic, resized":   {Epoch: 3, Path: "/ck/3", WorldSize: 2, ReferenceWorldSize: 4},
		"rigid (no sizes)":   {Epoch: 3, Path: "/ck/3"},
		"elastic, first run": {WorldSize: 4, ReferenceWorldSize: 4},
	}
	for name, rp := range tests {
		t.Run(name, func(t *testing.T) {
			r := NewRegistry(fakeClock(), nil)
			p := makePod("a").obj()
			p.Resume = rp
			r.SetPod(p)
			c := Caller{Session: 1, PodUID: "uid-a"}
			got, err := r.Register(c, "ns/a", 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(rp, got); diff != "" {
				t.Errorf("register (-want +got):\n%s", diff)
			}
			if got, err = r.ResumePoint(c); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(rp, got); diff != "" {
				t.Errorf("resume_point (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPollWaitsForRequest(t *testing.T) {
	r := NewRegistry(clocktesting.NewFakeClock(t0), nil)
	r.SetPod(makePod("a").obj())
	c := Caller{Session: 1, PodUID: "uid-a"}
	if _, err := r.Register(c, "ns/a", 0, 1); err != nil {
		t.Fatal(err)
	}
	got := make(chan *agentv1alpha1.CheckpointRequest)
	go func() {
		req, err := r.Poll(context.Background(), c, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- req
	}()
	r.SetPod(makePod("a").request("r9", agentv1alpha1.ModeNow).obj())
	if req := <-got; req == nil || req.ID != "r9" || req.Mode != agentv1alpha1.ModeNow {
		t.Fatalf("poll returned %+v, want request r9 now", req)
	}
	if _, err := r.Poll(context.Background(), c, time.Hour); err == nil {
		t.Error("a wait over the maximum accepted")
	}
}

func fakeClock() *clocktesting.FakeClock { return clocktesting.NewFakeClock(t0) }
