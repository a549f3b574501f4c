package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/clock"

	"github.com/pickyman/pickyman/agent/pkg/protocol"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

const envTestPodUID = "PICKYMAN_TEST_POD_UID"

// environResolver maps a process to the pod UID in its environment (PICKYMAN_TEST_POD_UID),
// standing in for /proc/<pid>/cgroup in tests: the pid still comes from SO_PEERCRED.
var environResolver = ResolverFunc(func(pid int32) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return "", err
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := strings.CutPrefix(string(kv), envTestPodUID+"="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("pid %d is not in a pod", pid)
})

// startServer serves a registry with pods a and b on a socket in a temporary directory.
func startServer(t *testing.T, resolver PodResolver) (string, *recorder) {
	t.Helper()
	return startServerWith(t, resolver, makePod("a").obj(), makePod("b").request("r1", agentv1alpha1.ModeBoundary).obj())
}

// startServerWith serves a registry with pods on a socket in a temporary directory.
func startServerWith(t *testing.T, resolver PodResolver, pods ...Pod) (string, *recorder) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pmsock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, agentv1alpha1.SocketName)
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	reg := NewRegistry(clock.RealClock{}, rec)
	for _, p := range pods {
		reg.SetPod(p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &Server{Registry: reg, Resolver: resolver}
	done := make(chan error)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return path, rec
}

// exchange sends lines on one connection and returns the responses.
func exchange(t *testing.T, path string, lines ...string) []protocol.Response {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rd := bufio.NewReader(c)
	var out []protocol.Response
	for _, l := range lines {
		if _, err := c.Write([]byte(l + "\n")); err != nil {
			t.Fatal(err)
		}
		b, err := rd.ReadBytes('\n')
		if err != nil {
			t.Fatalf("after %q: %v", l, err)
		}
		var r protocol.Response
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// codes reduces responses to their error codes ("ok" for success).
func codes(rs []protocol.Response) []string {
	var out []string
	for _, r := range rs {
		if r.OK {
			out = append(out, "ok")
		} else {
			out = append(out, string(r.Code))
		}
	}
	return out
}

// ownPod resolves only this test process, to pod a: it fails if SO_PEERCRED returns
// another pid.
func ownPod() PodResolver {
	return ResolverFunc(func(pid int32) (string, error) {
		if int(pid) != os.Getpid() {
			return "", fmt.Errorf("peer pid %d is not the test process %d", pid, os.Getpid())
		}
		return "uid-a", nil
	})
}

func TestServerPayloads(t *testing.T) {
	tests := map[string]struct {
		lines []string
		want  []string
	}{
		"a session": {
			lines: []string{
				`{"op":"register","pod":"ns/a","rank":0,"world_size":1}`,
				`{"op":"epoch_begin"}`,
				`{"op":"epoch_end","samples":10,"bytes":100}`,
				`{"op":"poll","wait_ms":1}`,
				`{"op":"resume_point"}`,
			},
			want: []string{"ok", "ok", "ok", "ok", "ok"},
		},
		"bad payloads change nothing and keep the connection": {
			lines: []string{
				`not json`,
				`{"op":"register","pod":"ns/a","rank":0,"world_size":1} {"op":"poll"}`,
				`{"op":"register","pod":"ns/a","rank":"zero","world_size":1}`,
				`{"op":"register","pod":"ns/a","world_size":1,"admin":true}`,
				`{"op":"teleport"}`,
				`{"op":"epoch_begin","path":"/etc"}`,
				`{"op":"checkpoint_done","epoch":1}`,
				`{"op":"register","pod":"ns/a","rank":-1,"world_size":1}`,
				`{"op":"poll","wait_ms":3600000}`,
				`{"op":"register","pod":"ns/a","rank":0,"world_size":1}`,
				`{"op":"poll","wait_ms":-5}`,
			},
			want: []string{"malformed", "malformed", "malformed", "malformed", "malformed", "malformed",
				"malformed", "malformed", "malformed", "ok", "malformed"},
		},
		"another pod's name": {
			lines: []string{`{"op":"register","pod":"ns/b","rank":0,"world_size":1}`},
			want:  []string{"forbidden"},
		},
		"the pod is the peer's when not named": {
			lines: []string{`{"op":"register","world_size":1}`, `{"op":"resume_point"}`},
			want:  []string{"ok", "ok"},
		},
		"out of order": {
			lines: []string{
				`{"op":"epoch_end","epoch":0}`,
				`{"op":"register","pod":"ns/a","rank":0,"world_size":1}`,
				`{"op":"epoch_end","epoch":0}`,
				`{"op":"checkpoint_done","request_id":"r1"}`,
			},
			want: []string{"out_of_order", "ok", "out_of_order", "out_of_order"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path, _ := startServer(t, ownPod())
			got := codes(exchange(t, path, tc.lines...))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
		})
	}
	path, _ := startServer(t, ownPod())
	long := `{"op":"register","pod":"` + strings.Repeat("x", protocol.MaxLine) + `"}`
	if got := codes(exchange(t, path, long)); got[0] != "malformed" {
		t.Errorf("an over-long line got %v", got)
	}
}

// TestServerResumeSizes: register and resume_point answer with the resume point's sizes
// (an elastic job's world size and reference size), and without them when the pod has none.
func TestServerResumeSizes(t *testing.T) {
	tests := map[string]struct {
		resume agentv1alpha1.ResumePoint
		want   *agentv1alpha1.ResumePoint
	}{
		"an elastic job at half its size": {
			resume: agentv1alpha1.ResumePoint{Epoch: 0, Path: "/ck/0", WorldSize: 2, ReferenceWorldSize: 4},
			want:   &agentv1alpha1.ResumePoint{Epoch: 0, Path: "/ck/0", WorldSize: 2, ReferenceWorldSize: 4},
		},
		"a rigid job": {
			resume: agentv1alpha1.ResumePoint{Path: "/ck/0"},
			want:   &agentv1alpha1.ResumePoint{Path: "/ck/0"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a := makePod("a").obj()
			a.Resume = tc.resume
			path, _ := startServerWith(t, ownPod(), a)
			rs := exchange(t, path, `{"op":"register","pod":"ns/a","rank":0,"world_size":1}`, `{"op":"resume_point"}`)
			for i, r := range rs {
				if !r.OK {
					t.Fatalf("call %d failed: %+v", i, r)
				}
				if diff := cmp.Diff(tc.want, r.Resume); diff != "" {
					t.Errorf("call %d: resume point (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

// TestHelperClient is not a test: run as a child process by TestServerPeerIdentity, it makes
// the calls in PICKYMAN_TEST_LINES and prints the responses' codes.
func TestHelperClient(t *testing.T) {
	lines := os.Getenv("PICKYMAN_TEST_LINES")
	if lines == "" {
		return
	}
	var out []protocol.Response
	c, err := net.Dial("unix", os.Getenv(agentv1alpha1.EnvSocket))
	if err != nil {
		fmt.Println("dial:", err)
		os.Exit(2)
	}
	rd := bufio.NewReader(c)
	for _, l := range strings.Split(lines, "\n") {
		if _, err := c.Write([]byte(l + "\n")); err != nil {
			fmt.Println("write:", err)
			os.Exit(2)
		}
		b, err := rd.ReadBytes('\n')
		if err != nil {
			fmt.Println("read:", err)
			os.Exit(2)
		}
		var r protocol.Response
		_ = json.Unmarshal(b, &r)
		out = append(out, r)
	}
	fmt.Println("CODES " + strings.Join(codes(out), ","))
	os.Exit(0)
}

// TestServerPeerIdentity runs clients in other processes whose pod is known only through
// their pid (SO_PEERCRED): a process may act only for its own pod, and a process of a pod
// that is not on the node gets nothing.
func TestServerPeerIdentity(t *testing.T) {
	path, rec := startServer(t, environResolver)
	tests := map[string]struct {
		podUID string
		lines  []string
		want   string
	}{
		"pod b acts for itself": {
			podUID: "uid-b",
			lines: []string{
				`{"op":"register","pod":"ns/b","rank":0,"world_size":1}`,
				`{"op":"poll"}`,
				`{"op":"checkpoint_done","request_id":"r1"}`,
			},
			want: "ok,ok,ok",
		},
		"pod a cannot answer for pod b": {
			podUID: "uid-a",
			lines: []string{
				`{"op":"register","pod":"ns/b","rank":0,"world_size":1}`,
				`{"op":"checkpoint_done","request_id":"r1"}`,
			},
			want: "forbidden,out_of_order",
		},
		"a pod of another node": {
			podUID: "uid-elsewhere",
			lines:  []string{`{"op":"register","pod":"ns/b","rank":0,"world_size":1}`},
			want:   "unknown_pod",
		},
		"a process outside any pod": {
			lines: []string{`{"op":"register","pod":"ns/a","rank":0,"world_size":1}`},
			want:  "unknown_pod",
		},
	}
	for _, name := range []string{"pod a cannot answer for pod b", "a pod of another node", "a process outside any pod", "pod b acts for itself"} {
		tc := tests[name]
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperClient$")
			cmd.Env = append(os.Environ(), "PICKYMAN_TEST_LINES="+strings.Join(tc.lines, "\n"), agentv1alpha1.EnvSocket+"="+path)
			if tc.podUID != "" {
				cmd.Env = append(cmd.Env, envTestPodUID+"="+tc.podUID)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			_, got, _ := strings.Cut(string(out), "CODES ")
			got, _, _ = strings.Cut(got, "\n")
			if got != tc.want {
				t.Errorf("codes %q, want %q", got, tc.want)
			}
		})
	}
	// Only pod b's own process acknowledged pod b's request, once.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.acks) != 1 || rec.acks[0].RequestID != "r1" {
		t.Errorf("acks %+v, want exactly one for r1", rec.acks)
	}
}
