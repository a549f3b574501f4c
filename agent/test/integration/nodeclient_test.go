//go:build integration

package integration

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/pickyman/pickyman/agent/pkg/api"
	"github.com/pickyman/pickyman/agent/pkg/app"
	"github.com/pickyman/pickyman/agent/pkg/coord"
	"github.com/pickyman/pickyman/agent/test/kubetest"
)

// requestLog counts the API requests that go through a rest config, by method, with watches
// and lists of pods apart.
type requestLog struct {
	mu    sync.Mutex
	byKey map[string]int
}

func (l *requestLog) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			key := r.Method
			switch {
			case strings.Contains(r.URL.RawQuery, "watch=true"):
				key = "WATCH"
			case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods"):
				key = "LIST pods"
			}
			l.mu.Lock()
			l.byKey[key]++
			l.mu.Unlock()
			return rt.RoundTrip(r)
		})
	}
	return cfg
}

func (l *requestLog) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for k, v := range l.byKey {
		out[k] = v
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestNodeClientSyncsFromOneWatch: the agent reads its node's pods from one informer. Its
// syncs (here every 50 ms) send no request to the API server at steady state; a new pod of
// the node reaches the registry through the watch, and a pod of another node never does.
func TestNodeClientSyncsFromOneWatch(t *testing.T) {
	c, cfg := kubetest.Env(t)
	kubetest.Create(t, c, kubetest.Node("n1", nil), kubetest.Node("n2", nil), kubetest.Pod("mine", "n1", nil, 1), kubetest.Pod("other", "n2", nil, 1))

	log := &requestLog{byKey: map[string]int{}}
	co := &coord.Coordinator{Node: "n1", Clock: clock.RealClock{}, Log: testr.New(t), Resync: 50 * time.Millisecond}
	reg, stop := startNodeAgent(t, cfg, log, co)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("coordinator: %v", err)
		}
	}()
	kubetest.Eventually(t, "pod of n1 in the registry", 10*time.Second, func() bool { return len(reg.PodUIDs()) == 1 })

	before := log.counts()
	const steady = 2 * time.Second // 40 resyncs
	time.Sleep(steady)
	after := log.counts()
	// The agent's own node writes (a GET and a PATCH of its node) may fall in the window on a
	// slow machine; the syncs must list and watch no pods.
	if after["LIST pods"] != before["LIST pods"] || after["WATCH"] != before["WATCH"] {
		t.Errorf("requests during %v of resyncs: before %v, after %v; want no new list or watch of pods", steady, before, after)
	}
	sent := 0
	for k, v := range after {
		sent += v - before[k]
	}
	t.Logf("agent API requests at steady state: %d in %v (%.2f/s); since start %v", sent, steady, float64(sent)/steady.Seconds(), after)

	late := kubetest.Pod("late", "n1", nil, 1)
	kubetest.Create(t, c, late)
	kubetest.Eventually(t, "watched pod in the registry", 10*time.Second, func() bool { _, ok := reg.Pod(string(late.UID)); return ok })
	for _, uid := range reg.PodUIDs() {
		if p, _ := reg.Pod(uid); p.Name == "other" {
			t.Fatal("the agent of n1 holds a pod of n2")
		}
	}
}

// startNodeAgent runs co as the agent of its node: its registry, and its pod client reading
// the node's pods through one informer on cfg, whose requests log counts. stop ends the
// coordinator and returns what its Run returned.
func startNodeAgent(tb testing.TB, cfg *rest.Config, log *requestLog, co *coord.Coordinator) (reg *api.Registry, stop func() error) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reg = api.NewRegistry(clock.RealClock{}, co)
	co.Registry = reg
	pc, err := app.NewNodeClient(ctx, log.wrap(cfg), co.Node, co.Trigger)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	co.Client = pc
	done := make(chan error, 1)
	go func() { done <- co.Run(ctx) }()
	return reg, func() error {
		cancel()
		return <-done
	}
}
