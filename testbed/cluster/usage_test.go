package cluster

import (
	"context"
	"crypto/sha256"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSampleUsageOfABusyProcess samples this test process while a goroutine keeps it busy
// hashing, so its CPU share must be above zero and its RSS positive.
func TestSampleUsageOfABusyProcess(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sum := sha256.Sum256(nil)
		for {
			select {
			case <-stop:
				return
			default:
				// A round of work between looks at stop: the CPU time the sample must see.
				for range 1000 {
					sum = sha256.Sum256(sum[:])
				}
			}
		}
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
