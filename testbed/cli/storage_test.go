package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pickyman/pickyman/testbed/storage"
)

func TestStorageServeCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	addrFile := filepath.Join(t.TempDir(), "addr")
	var stdout, stderr bytes.Buffer
	root := NewRootCommand()
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"storage", "serve", "--dir", dir, "--listen", "127.0.0.1:0", "--addr-file", addrFile,
		"--dataset", "small=64Ki", "--dataset", "paced=128Ki@1Mi"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("serve ended before it listened: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no address written within 30 s")
		}
		b, _ := os.ReadFile(addrFile)
		addr = strings.TrimSpace(string(b))
	}
	// The object is the dataset the store generates anywhere for that name and size.
	want := filepath.Join(t.TempDir(), "want")
	if err := storage.Generate(want, 64<<10, storage.Dataset{Name: "small"}.Seed()); err != nil {
		t.Fatal(err)
	}
	wantBytes, _ := os.ReadFile(want)
	resp, err := http.Get("http://" + addr + "/small")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, wantBytes) {
		t.Fatalf("GET small: %d, %d bytes; want 200 and the generated %d bytes", resp.StatusCode, len(got), len(wantBytes))
	}
	if st, err := os.Stat(filepath.Join(dir, "paced")); err != nil || st.Size() != 128<<10 {
		t.Fatalf("paced not generated: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30 s of its context's end")
	}
	if !strings.Contains(stderr.String(), "1 requests answered, 65536 bytes sent") {
		t.Errorf("stderr lacks the totals:\n%s", stderr.String())
	}
}

func TestStorageServeRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "127.0.0.1:0"}, "--dir"},
		{[]string{"--dir", t.TempDir(), "--dataset", "a"}, "--dataset: dataset \"a\": want NAME=SIZE"},
		{[]string{"--dir", t.TempDir(), "--dataset", "../a=1Mi"}, "object key"},
		{[]string{"--dir", t.TempDir(), "--rate", "fast"}, "--rate: \"fast\" is not a quantity"},
		{[]string{"--dir", t.TempDir(), "--listen", "nowhere"}, "--listen"},
	} {
		var stderr bytes.Buffer
		root := NewRootCommand()
		root.SetOut(io.Discard)
		root.SetErr(&stderr)
		root.SetArgs(append([]string{"storage", "serve"}, c.args...))
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("storage serve %v: %v; want an error containing %q", c.args, err, c.want)
		}
	}
}
