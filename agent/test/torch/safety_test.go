//go:build torch

package torch

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// safetyScript checks, in Debian's PyTorch, that the client refuses a socket whose listener
// runs as another uid than the agent's, and that the example's checkpoints round-trip
// through the weights-only loader while a checkpoint carrying code is refused unrun. It
// prints one line per check; argv: the example's directory, a scratch directory.
const safetyScript = `
import os, socket, sys
sys.path.insert(0, os.path.join(sys.argv[1], ".."))
sys.path.insert(0, sys.argv[1])
import torch
import train_ddp
from pickyman_agent import Client, ENV_AGENT_UID

scratch = sys.argv[2]
path = os.path.join(scratch, "agent.sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(4)
os.environ[ENV_AGENT_UID] = str(os.getuid())
Client(path).close()
print("own uid: connected")
os.environ[ENV_AGENT_UID] = str(os.getuid() + 1)
try:
    Client(path)
    print("other uid: connected")
except PermissionError as e:
    print("other uid: refused:", e)

torch.manual_seed(1)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
opt = torch.optim.Adam(model.parameters(), lr=0.001)
model(torch.ones(3, 4)).sum().backward()
opt.step()
ckpt = os.path.join(scratch, "ckpt.pt")
torch.save(train_ddp.pack(model, opt, 3, 2, 2), ckpt)
meta, ms, os_ = train_ddp.load(ckpt)
m2 = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
o2 = torch.optim.Adam(m2.parameters(), lr=0.5)
m2.load_state_dict(ms)
o2.load_state_dict(os_)
import json
plain = lambda groups: json.loads(json.dumps(groups))  # a tuple (Adam's betas) comes back a list
same = train_ddp.param_hash(m2) == train_ddp.param_hash(model) and plain(o2.state_dict()["param_groups"]) == plain(opt.state_dict()["param_groups"]) \
    and all(torch.equal(a, b) for s1, s2 in zip(o2.state_dict()["state"].values(), opt.state_dict()["state"].values()) for a, b in zip(s1.values(), s2.values()))
print("round trip:", "identical" if same and meta["epoch"] == 3 else "different")

marker = os.path.join(scratch, "ran")
class Payload:
    def __reduce__(self):
        return (open, (marker, "w"))
evil = os.path.join(scratch, "evil.pt")
torch.save({"meta": "{}", "model": Payload(), "opt_state": {}}, evil)
try:
    train_ddp.load(evil)
    print("code checkpoint: loaded")
except Exception as e:
    print("code checkpoint: refused:", type(e).__name__)
print("payload ran:", os.path.exists(marker))
`

func TestPythonClientAndCheckpointSafety(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	examples := filepath.Join(filepath.Dir(file), "..", "..", "python", "examples")
	cmd := exec.Command(python, "-c", safetyScript, examples, t.TempDir())
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"own uid: connected",
		"other uid: refused:",
		"round trip: identical",
		"code checkpoint: refused: UnpicklingError",
		"payload ran: False",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
