package cluster

import (
	"context"
	"crypto/sha256"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// spin keeps the calling thread busy hashing until stop is closed, a round of work between
// looks at stop: the CPU time a sample must see.
func spin(stop <-chan struct{}) {
	sum := sha256.Sum256(nil)
	for {
		select {
		case <-stop:
			return
		default:
			for range 1000 {
				sum = sha256.Sum256(sum[:])
			}
		}
	}
}

// TestSampleUsageOfABusyProcess samples this test process while a goroutine keeps it busy
// hashing, so its CPU share must be above zero and its RSS positive.
func TestSampleUsageOfABusyProcess(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		spin(stop)
	}()
	defer func() { close(stop); <-done }()
	us, err := SampleUsage(context.Background(), map[string]int{"self": os.Getpid()}, 300*time.Millisecond, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 1 || us[0].CPU <= 0 || us[0].RSSMiB <= 0 || us[0].MaxRSSMiB < us[0].RSSMiB {
		t.Fatalf("usage = %+v, want positive CPU and RSS", us)
	}
	var b strings.Builder
	PrintUsage(&b, us)
	if !strings.Contains(b.String(), "self") || !strings.Contains(b.String(), "total") {
		t.Errorf("table lacks rows:\n%s", b.String())
	}
	if _, err := SampleUsage(context.Background(), map[string]int{"gone": 1 << 30}, time.Millisecond, time.Millisecond); err == nil {
		t.Error("SampleUsage accepted a pid that does not exist")
	}
}

// TestSampleUsageWait pins two busy threads of this test process to one core, so that each
// waits for it about half the time: the sample's Wait must show it.
func TestSampleUsageWait(t *testing.T) {
	stop := make(chan struct{})
	var started, done [2]chan struct{}
	for i := range 2 {
		started[i], done[i] = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done[i])
			// Left locked: the thread, pinned, ends with the goroutine.
			runtime.LockOSThread()
			var set unix.CPUSet
			set.Set(0)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				t.Errorf("pinning a thread: %v", err)
				close(started[i])
				return
			}
			close(started[i])
			spin(stop)
		}()
	}
	defer func() {
		close(stop)
		for _, d := range done {
			<-d
		}
	}()
	<-started[0]
	<-started[1]
	us, err := SampleUsage(context.Background(), map[string]int{"self": os.Getpid()}, 500*time.Millisecond, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// Two threads on one core: about one thread waits at any time.
	if len(us) != 1 || us[0].Wait < 0.3 {
		t.Fatalf("usage = %+v, want Wait near 1 for two busy threads on one core", us)
	}
	t.Logf("wait %.3f cpu %.3f", us[0].Wait, us[0].CPU)
	var b strings.Builder
	PrintUsage(&b, us)
	if !strings.Contains(b.String(), "cpu wait") {
		t.Errorf("table lacks the cpu wait column:\n%s", b.String())
	}
}
