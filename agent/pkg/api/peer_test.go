package api

import (
	"bufio"
	"strings"
	"testing"
)

func TestParseCgroup(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    string
		wantErr bool
	}{
		"cgroup v2, systemd driver": {
			in:   "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f4a8c7e_1b2d_4e5f_8a9b_0c1d2e3f4a5b.slice/cri-containerd-abc.scope\n",
			want: "0f4a8c7e-1b2d-4e5f-8a9b-0c1d2e3f4a5b",
		},
		"cgroup v1, cgroupfs driver": {
			in:   "12:memory:/kubepods/besteffort/pod0f4a8c7e-1b2d-4e5f-8a9b-0c1d2e3f4a5b/0123abcd\n11:cpu:/kubepods/besteffort/pod0f4a8c7e-1b2d-4e5f-8a9b-0c1d2e3f4a5b/0123abcd\n",
			want: "0f4a8c7e-1b2d-4e5f-8a9b-0c1d2e3f4a5b",
		},
		"guaranteed pod": {
			in:   "0::/kubepods.slice/kubepods-pod11111111_2222_3333_4444_555555555555.slice/cri-containerd-x.scope\n",
			want: "11111111-2222-3333-4444-555555555555",
		},
		"host process":     {in: "0::/system.slice/sshd.service\n", wantErr: true},
		"a lookalike name": {in: "0::/user.slice/podman-1234.scope\n", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseCgroup(bufio.NewScanner(strings.NewReader(tc.in)), 42)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestCgroupResolverOwnProcess(t *testing.T) {
	// This test process is not in a pod: the resolver must say so, not invent a UID.
	if uid, err := (CgroupResolver{Root: "/proc"}).PodUID(1); err == nil && uid == "" {
		t.Errorf("empty UID without an error")
	}
	if _, err := (CgroupResolver{Root: "/nonexistent"}).PodUID(1); err == nil {
		t.Error("missing /proc accepted")
	}
}

// FuzzHandle feeds arbitrary lines to a registered session: nothing may panic, and a refused
// line must leave the pod's progress unchanged.
func FuzzHandle(f *testing.F) {
	for _, s := range []string{
		`{"op":"epoch_begin"}`, `{"op":"epoch_end","epoch":0,"samples":1,"bytes":2}`, `{"op":"poll"}`,
		`{"op":"checkpoint_done","request_id":"r1","epoch":1}`, `{"op":"register","pod":"ns/a","world_size":1}`,
		`{"op":"epoch_begin","epoch":-1}`, `[]`, `{"op":"poll","wait_ms":1e30}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		reg := NewRegistry(fakeClock(), nil)
		reg.SetPod(makePod("a").request("r1", "boundary").obj())
		srv := &Server{Registry: reg}
		c := Caller{Session: 1, PID: 1, PodUID: "uid-a"}
		if _, err := reg.Register(c, "ns/a", 0, 1); err != nil {
			t.Fatal(err)
		}
		before, _ := reg.Progress("uid-a")
		resp := srv.handle(t.Context(), c, []byte(line))
		after, _ := reg.Progress("uid-a")
		if !resp.OK && before != after {
			t.Errorf("refused line %q changed progress %+v -> %+v", line, before, after)
		}
		if !resp.OK && (resp.Code == "" || resp.Error == "") {
			t.Errorf("refusal without code or message: %+v", resp)
		}
	})
}

// BenchmarkHandlePoll measures one decoded, validated poll call (what a training step costs
// the agent, without the socket).
func BenchmarkHandlePoll(b *testing.B) {
	reg := NewRegistry(fakeClock(), nil)
	reg.SetPod(makePod("a").obj())
	srv := &Server{Registry: reg}
	c := Caller{Session: 1, PID: 1, PodUID: "uid-a"}
	if _, err := reg.Register(c, "ns/a", 0, 1); err != nil {
		b.Fatal(err)
	}
	line := []byte(`{"op":"poll"}`)
	for b.Loop() {
		if resp := srv.handle(b.Context(), c, line); !resp.OK {
			b.Fatal(resp.Error)
		}
	}
}
