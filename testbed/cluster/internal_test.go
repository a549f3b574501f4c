package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCreateArgsUseLocalBinariesAndStages(t *testing.T) {
	root, err := RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Name: "t", Home: "/h", BinDir: "/b", StagesDir: filepath.Join(root, "config", "kwok"), Timeout: time.Minute}
	args, err := o.createArgs()
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(args, " ")
	for _, want := range []string{
		"create cluster --name t --runtime binary --kubeconfig  --wait 1m0s",
		"--etcd-binary /b/etcd", "--kube-apiserver-binary /b/kube-apiserver",
		"--kube-controller-manager-binary /b/kube-controller-manager",
		"--kube-scheduler-binary /b/kube-scheduler", "--kwok-controller-binary /b/kwok",
		"--config " + filepath.Join(root, "config", "kwok", "pod-complete.yaml"),
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("kwokctl args lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "kustomization.yaml") {
		t.Errorf("kwokctl args pass the kustomization: %s", joined)
	}
	if _, err := (Options{StagesDir: t.TempDir()}).createArgs(); err == nil {
		t.Error("createArgs accepted a directory without stages")
	}
}

func TestMissingBinariesNamesEachPath(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"kwokctl", "etcd", "kwok"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{BinDir: dir, TrainingOperator: true}
	want := []string{
		filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "kube-controller-manager"),
		filepath.Join(dir, "kube-scheduler"), filepath.Join(dir, "training-operator"),
	}
	if diff := cmp.Diff(want, o.MissingBinaries()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestWebhookCertsChainToTheCA(t *testing.T) {
	const dns = "training-operator.kubeflow.svc"
	c, err := newWebhookCerts(dns, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	parse := func(b []byte) *x509.Certificate {
		blk, _ := pem.Decode(b)
		if blk == nil {
			t.Fatal("no PEM block")
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	pool := x509.NewCertPool()
	pool.AddCert(parse(c.CACert))
	if _, err := parse(c.Cert).Verify(x509.VerifyOptions{DNSName: dns, Roots: pool}); err != nil {
		t.Errorf("serving certificate does not verify: %v", err)
	}
	if diff := cmp.Diff([]string{"ca.crt", "ca.key", "tls.crt", "tls.key"}, sortedKeys(c.Data())); diff != "" {
		t.Errorf("secret keys (-want +got):\n%s", diff)
	}
}

func sortedKeys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestDetachedProcessLifecycle starts a process the way Up starts the training-operator and
// stops it the way Down does, then checks that nothing is left.
func TestDetachedProcessLifecycle(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "p.pid")
	pid, err := startDetached(sleep, []string{"60"}, nil, filepath.Join(dir, "p.log"), pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := readPid(pidFile); got != pid {
		t.Fatalf("pid file holds %d, want %d", got, pid)
	}
	if !alive(pid) {
		t.Fatalf("process %d not alive after start", pid)
	}
	if diff := cmp.Diff(map[string]int{"p": pid}, pidsIn(dir)); diff != "" {
		t.Errorf("pidsIn (-want +got):\n%s", diff)
	}
	if err := stopPid(pid, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("process %d alive after stop", pid)
	}
	if err := verifyGone(map[string]int{"p": pid}, nil); err != nil {
		t.Error(err)
	}
}

func TestListeningPortsAndVerifyGone(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	if listening(port) {
		t.Fatalf("free port %d is listening", port)
	}
	l, err := netListen(port)
	if err != nil {
		t.Fatal(err)
	}
	if !listening(port) {
		t.Fatalf("port %d not listening", port)
	}
	found := false
	for _, p := range listeningPorts(os.Getpid()) {
		found = found || p == port
	}
	if !found {
		t.Errorf("listeningPorts(self) lacks %d", port)
	}
	if err := verifyGone(nil, map[int]string{port: "test"}); err == nil {
		t.Error("verifyGone passed with an open port")
	}
	l.Close()
	if err := verifyGone(nil, map[int]string{port: "test"}); err != nil {
		t.Error(err)
	}
}

func netListen(port int) (interface{ Close() error }, error) {
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// TestRetryBind: a component that exits because a port was taken is started again, up to
// bindAttempts times; one that exits for any other reason is not.
func TestRetryBind(t *testing.T) {
	o := Options{Home: t.TempDir(), Name: "retry"}
	if err := os.MkdirAll(o.Workdir(), 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := o.ComponentLog(ComponentOperator)
	write := func(line string) {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	// Binds fail twice, then the start succeeds.
	calls := 0
	err := o.retryBind(ComponentOperator, func() error {
		calls++
		if calls < 3 {
			write("error: listen tcp 127.0.0.1:4000: bind: address already in use")
			return fmt.Errorf("not ready: %w", errNotRunning)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("bind failures twice then success: err %v after %d starts, want nil after 3", err, calls)
	}
	// A crash for another reason is not retried, even with an old bind failure in the log.
	calls = 0
	err = o.retryBind(ComponentOperator, func() error {
		calls++
		write("error: inject webhook CA: forbidden")
		return fmt.Errorf("not ready: %w", errNotRunning)
	})
	if !errors.Is(err, errNotRunning) || calls != 1 {
		t.Errorf("other crash: err %v after %d starts, want errNotRunning after 1", err, calls)
	}
	// Bind failures every time: given up after bindAttempts starts.
	calls = 0
	err = o.retryBind(ComponentOperator, func() error {
		calls++
		write("bind: address already in use")
		return fmt.Errorf("not ready: %w", errNotRunning)
	})
	if !errors.Is(err, errNotRunning) || calls != bindAttempts {
		t.Errorf("persistent bind failure: err %v after %d starts, want errNotRunning after %d", err, calls, bindAttempts)
	}
}

// TestKillTrainingOperator: a crash of the training-operator kills the process its pid file
// names, and a kill of one that is not running is an error, not a silent success.
func TestKillTrainingOperator(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Home: t.TempDir(), Name: "k"}
	if err := os.MkdirAll(o.Workdir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := o.StopComponent(ComponentTrainingOperator, true); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("kill with nothing running: %v, want a 'not running' error", err)
	}
	pid, err := startDetached(sleep, []string{"60"}, nil, o.operatorLog(), o.operatorPid())
	if err != nil {
		t.Fatal(err)
	}
	if err := o.StopComponent(ComponentTrainingOperator, true); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("training-operator stand-in %d alive after the kill", pid)
	}
}
