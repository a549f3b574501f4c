package api

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

// clientScript drives the Python client (agent/python/pickyman_agent) through a session of
// pod b, whose checkpoint request r1 is pending and whose resume point is an elastic job's
// at 2 of its 4 workers, and prints the outcome.
const clientScript = `
import sys
sys.path.insert(0, sys.argv[1])
from pickyman_agent import AgentError, Client, ResumePoint, EXIT_SUSPENDED
# An answer without sizes (a rigid job, an older agent) gives zeros.
old = Client._resume({"ok": True, "resume": {"epoch": 3, "path": "/ck/3"}})
assert old == ResumePoint(3, "/ck/3") and old.world_size == 0 and old.reference_world_size == 0, old
c = Client()
try:
    c.epoch_begin(0)
    print("FAIL: epoch_begin before register accepted")
except AgentError as e:
    assert e.code == "out_of_order", e.code
try:
    c.register("ns/a", 0, 1)
    print("FAIL: registered as another pod")
except AgentError as e:
    assert e.code == "forbidden", e.code
rp = c.register("ns/b", 0, 1)
assert rp.epoch == 0 and rp.world_size == 2 and rp.reference_world_size == 4, rp
assert c.resume_point() == rp, c.resume_point()
c.epoch_begin(0)
c.epoch_end(0, samples=10, nbytes=1000)
req = c.requested()
assert req is not None and req.id == "r1" and req.mode == "boundary", req
c.checkpoint_done(req.id, 1, "/ck/1", 123, 0.5)
assert c.poll() is None
assert EXIT_SUSPENDED == 143
print("CLIENT OK")
`

func TestPythonClient(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to test the Python client: %v", err)
	}
	b := makePod("b").request("r1", agentv1alpha1.ModeBoundary).obj()
	b.Resume = agentv1alpha1.ResumePoint{WorldSize: 2, ReferenceWorldSize: 4}
	path, rec := startServerWith(t, environResolver, makePod("a").obj(), b)
	_, file, _, _ := runtime.Caller(0)
	pkg := filepath.Join(filepath.Dir(file), "..", "..", "python")
	cmd := exec.Command(py, "-c", clientScript, pkg)
	cmd.Env = append(os.Environ(), agentv1alpha1.EnvSocket+"="+path, envTestPodUID+"=uid-b")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CLIENT OK") || strings.Contains(string(out), "FAIL") {
		t.Fatalf("client: %v\n%s", err, out)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.acks) != 1 || rec.acks[0].Path != "/ck/1" || rec.acks[0].Bytes != 123 || rec.acks[0].Epoch != 1 {
		t.Errorf("acks %+v, want one for /ck/1", rec.acks)
	}
}
