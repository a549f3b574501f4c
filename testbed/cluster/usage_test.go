package cluster

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSampleUsageOfABusyProcess samples this test process while it spins, so its CPU share
// must be above zero and its RSS positive.
func TestSampleUsageOfABusyProcess(t *testing.T) {
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	defer close(stop)
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
