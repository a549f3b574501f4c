//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pickyman/pickyman/agent/pkg/api"
	"github.com/pickyman/pickyman/agent/pkg/app"
	"github.com/pickyman/pickyman/agent/pkg/coord"
	"github.com/pickyman/pickyman/agent/test/kubetest"
)

// BenchmarkAgentRequests measures the API requests of one agent at steady state (make
// bench-agent): the agent's pod informer and coordinator with the shipped defaults
// (app.DefaultProgressWrites, app.DefaultProgressBurst, a 2 s resync) on a node whose pods
// each run a training process that reports its epochs through the agent's registry. After a
// warm-up of 15 s the requests of PICKYMAN_AGENT_WINDOW (default 60 s) are counted, and it
// prints "agent API requests/s: X" for each case: eight pods with one-minute epochs (a
// node of eight GPUs, one job each), and sixteen pods with five-second epochs (more pods
// and epochs than the budget allows for).
func BenchmarkAgentRequests(b *testing.B) {
	window := time.Minute
	if v := os.Getenv("PICKYMAN_AGENT_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("PICKYMAN_AGENT_WINDOW=%q: want a positive duration", v)
		}
		window = d
	}
	for _, tc := range []struct {
		pods  int
		epoch time.Duration
	}{{8, time.Minute}, {16, 5 * time.Second}} {
		b.Run(fmt.Sprintf("pods=%d/epoch=%v", tc.pods, tc.epoch), func(b *testing.B) {
			for range b.N {
				rate := agentRequests(b, tc.pods, tc.epoch, window)
				b.ReportMetric(rate, "requests/s")
			}
		})
	}
}

func agentRequests(b *testing.B, pods int, epoch, window time.Duration) float64 {
	ctrllog.SetLogger(logr.Discard())
	c, cfg := kubetest.Env(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kubetest.Create(b, c, kubetest.Node("n1", nil))
	for i := range pods {
		kubetest.Create(b, c, kubetest.Pod("train-"+strconv.Itoa(i), "n1", nil, 1))
	}
	log := &requestLog{byKey: map[string]int{}}
	co := &coord.Coordinator{Node: "n1", Clock: clock.RealClock{}, Log: logr.Discard(), Resync: 2 * time.Second,
		ProgressWrites: app.DefaultProgressWrites, ProgressBurst: app.DefaultProgressBurst}
	reg, stop := startNodeAgent(b, cfg, log, co)
	kubetest.Eventually(b, "every pod in the registry", 30*time.Second, func() bool { return len(reg.PodUIDs()) == pods })

	// One training process per pod: epochs of the given length, their phases spread.
	for i, uid := range reg.PodUIDs() {
		p, _ := reg.Pod(uid)
		caller := api.Caller{Session: uint64(i + 1), PID: int32(1000 + i), PodUID: uid}
		if _, err := reg.Register(caller, p.Namespace+"/"+p.Name, 0, 1); err != nil {
			b.Fatal(err)
		}
		offset := epoch * time.Duration(i) / time.Duration(pods)
		go func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(offset):
			}
			for e := int32(0); ctx.Err() == nil; e++ {
				if err := reg.EpochBegin(caller, e); err != nil {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(epoch):
				}
				if err := reg.EpochEnd(caller, e, 1000, 1<<30); err != nil {
					return
				}
			}
		}()
	}

	time.Sleep(15 * time.Second)
	before, coalescedBefore := log.counts(), co.Coalesced()
	b.ResetTimer()
	time.Sleep(window)
	b.StopTimer()
	after, coalesced := log.counts(), co.Coalesced()-coalescedBefore
	cancel()
	if err := stop(); err != nil {
		b.Errorf("coordinator: %v", err)
	}

	total := 0
	var parts []string
	for k, v := range after {
		if n := v - before[k]; n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	sort.Strings(parts)
	rate := float64(total) / window.Seconds()
	want := float64(pods) / (10 * time.Second).Seconds() // unthrottled: each pod's progress every ProgressInterval
	fmt.Printf("pods %d, epochs of %v: %d requests in %v (%s); %d progress reports replaced by newer ones before being written\n", pods, epoch, total, window, strings.Join(parts, ", "), coalesced)
	fmt.Printf("agent API requests/s: %.2f\n", rate)
	if total == 0 {
		b.Errorf("no request in %v: the training processes' progress was not written", window)
	}
	if rate > app.DefaultProgressWrites*1.25 && rate > want {
		b.Errorf("%.2f requests/s exceeds the progress budget of %g/s", rate, app.DefaultProgressWrites)
	}
	return rate
}
