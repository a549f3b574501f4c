//go:build integration

package integration

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/e2e/util"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	"github.com/pickyman/pickyman/operator/internal/setup"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
)

// envInt reads a positive integer from the environment, def when unset.
func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// BenchmarkAdmissionStage measures the operator's admission stage alone, on a real
// kube-apiserver without the training-operator or any node agent: jobs one GPU each
// (PICKYMAN_STAGE_JOBS, default 5,000) are submitted and queued while the cluster's GPU
// nodes (PICKYMAN_STAGE_NODES, default 1,000, 8 GPUs each) are cordoned; then every node
// is uncordoned at once and the operator admits the jobs, each admission an Allocation status write and a
// job update. It prints `admissions/s: X` (jobs over the time from the first node to the last
// admission), `cycle p99 ms: Y` (the cycle histogram's 99th percentile, computed as
// histogram_quantile does), the submission rate, and the Go heap of the process. The
// operator's client pacing is PICKYMAN_STAGE_QPS and PICKYMAN_STAGE_BURST, its job workers
// PICKYMAN_STAGE_JOB_CONCURRENCY and its concurrent Allocation writes
// PICKYMAN_STAGE_WRITE_CONCURRENCY (default: the configuration's defaults). It also prints
// `queued/s: X`, the jobs over the time from the first submission to the last job queued:
// the job controller's queueing rate where it keeps pace with the submissions, the
// submission rate where it does not (then the line before it shows a lag after the last
// submission).
//
//	make bench-admission
func BenchmarkAdmissionStage(b *testing.B) {
	nodes := envInt(b, "PICKYMAN_STAGE_NODES", 1000)
	jobs := envInt(b, "PICKYMAN_STAGE_JOBS", 5000)
	conf := &configv1.Configuration{
		Queues: []configv1.Queue{{Name: "default"}},
		Policy: configv1.Policy{Name: envString("PICKYMAN_STAGE_POLICY", "fifo")},
	}
	conf.Default()
	conf.Manager.HealthProbeBindAddress = "0"
	conf.Manager.LeaderElection = new(bool)
	if q := os.Getenv("PICKYMAN_STAGE_QPS"); q != "" {
		conf.ClientConnection.QPS = float32(envInt(b, "PICKYMAN_STAGE_QPS", 0))
		conf.ClientConnection.Burst = int32(envInt(b, "PICKYMAN_STAGE_BURST", 2*int(conf.ClientConnection.QPS)))
	}
	conf.JobConcurrency = int32(envInt(b, "PICKYMAN_STAGE_JOB_CONCURRENCY", int(conf.JobConcurrency)))
	conf.WriteConcurrency = int32(envInt(b, "PICKYMAN_STAGE_WRITE_CONCURRENCY", int(conf.WriteConcurrency)))
	for range b.N {
		ns := newNamespace(b)
		m := metrics.New()
		wo := &env.WebhookInstallOptions
		conf.Manager.WebhookPort = wo.LocalServingPort
		mgr, err := setup.New(env.Config, conf, setup.Options{
			Webhooks: true, WebhookHost: wo.LocalServingHost, WebhookCertDir: wo.LocalServingCertDir,
			DisableMetricsServer: true, SkipNameValidation: true, Metrics: m,
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		// The benchmark's own client is not paced: it stands for many users and kubelets.
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = -1, 0
		c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
		if err != nil {
			b.Fatal(err)
		}
		waitWebhook(b)
		names := make([]string, nodes)
		for i := range names {
			names[i] = fmt.Sprintf("stage-%s-%04d", ns, i)
		}
		b.Cleanup(func() {
			for _, n := range names {
				_ = k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
			}
		})
		parallel(b, nodes, func(i int) error { return createGPUNode(ctx, c, names[i], 8) })

		start := time.Now()
		parallel(b, jobs, func(i int) error {
			return c.Create(ctx, utiltesting.MakePyTorchJob(fmt.Sprintf("j%05d", i), ns).Master(1).Obj())
		})
		submitted := time.Since(start)
		fmt.Printf("submitted %d jobs in %v\n", jobs, submitted.Round(time.Millisecond))
		waitCount(b, c, ns, jobs, v1alpha1.AllocationQueued, 10*time.Minute)
		queued := time.Since(start)

		cyclesBefore := histogramOf(b, m.CycleDuration)
		stagesBefore := map[string]*dto.Histogram{}
		for _, st := range cycleStages {
			stagesBefore[st] = histogramOf(b, m.CycleStage.WithLabelValues(st).(prometheus.Histogram))
		}
		t0 := time.Now()
		uncordon := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":false}}`))
		parallel(b, nodes, func(i int) error {
			return c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}, uncordon)
		})
		nodesUp := time.Since(t0)
		admitted := min(jobs, nodes*8)
		last := waitCount(b, c, ns, admitted, v1alpha1.AllocationAdmitted, 30*time.Minute)
		elapsed := last.Sub(t0)
		cycles := histogramOf(b, m.CycleDuration)
		var stages []string
		for _, st := range cycleStages {
			h := histogramOf(b, m.CycleStage.WithLabelValues(st).(prometheus.Histogram))
			stages = append(stages, fmt.Sprintf("%s %.0f", st, quantile(0.99, h, stagesBefore[st])*1000))
		}
		// The heap while the operator still runs with every job admitted: in use (what the
		// collector had not yet reclaimed) and live (after a collection).
		var ms, live runtime.MemStats
		runtime.ReadMemStats(&ms)
		runtime.GC()
		runtime.ReadMemStats(&live)
		cancel()
		if err := <-done; err != nil {
			b.Errorf("operator: %v", err)
		}

		rate := float64(admitted) / elapsed.Seconds()
		p99 := quantile(0.99, cycles, cyclesBefore) * 1000
		count := cycles.GetSampleCount() - cyclesBefore.GetSampleCount()
		mean := (cycles.GetSampleSum() - cyclesBefore.GetSampleSum()) / float64(max(count, 1)) * 1000
		fmt.Printf("stage: %d nodes, %d one-GPU jobs, policy %s, operator client qps %g burst %d, %d job workers, %d concurrent writes\n",
			nodes, jobs, conf.Policy.Name, conf.ClientConnection.QPS, conf.ClientConnection.Burst, conf.JobConcurrency, conf.WriteConcurrency)
		fmt.Printf("submitted %d jobs in %v (%.1f/s); all queued after %v, %v after the last submission\n",
			jobs, submitted.Round(time.Millisecond), float64(jobs)/submitted.Seconds(), queued.Round(time.Millisecond), (queued - submitted).Round(time.Millisecond))
		fmt.Printf("queued/s: %.1f\n", float64(jobs)/queued.Seconds())
		fmt.Printf("nodes uncordoned in %v; %d admitted %v after the first uncordon\n", nodesUp.Round(time.Millisecond), admitted, elapsed.Round(time.Millisecond))
		fmt.Printf("admissions/s: %.1f\n", rate)
		fmt.Printf("cycle p99 ms: %.0f\n", p99)
		fmt.Printf("cycles: %d, mean %.0f ms\n", count, mean)
		fmt.Printf("stage p99 ms: %s\n", strings.Join(stages, ", "))
		fmt.Printf("process heap in use: %d MiB, live after a collection: %d MiB (operator, API clients and the benchmark together)\n", ms.HeapInuse>>20, live.HeapInuse>>20)
		b.ReportMetric(rate, "admissions/s")
		b.ReportMetric(p99, "cycle-p99-ms")
	}
}

func envString(name, def string) string {
	if s := os.Getenv(name); s != "" {
		return s
	}
	return def
}

// waitWebhook waits until the webhook configuration answers (a job create passes).
func waitWebhook(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var list v1alpha1.AllocationList
		if err := k8s.List(context.Background(), &list, client.Limit(1)); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatal("API server not answering")
}

// parallel runs f for 0..n-1 on 32 workers; the first error fails the benchmark.
func parallel(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				var err error
				for try := 0; try < 20; try++ {
					if err = f(i); err == nil {
						break
					}
					time.Sleep(200 * time.Millisecond) // the webhook may not answer yet
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}

// createGPUNode creates a cordoned node with gpus GPUs.
func createGPUNode(ctx context.Context, c client.Client, name string, gpus int64) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"nvidia.com/gpu.product": "A100"}}}
	if err := c.Create(ctx, node); err != nil {
		return client.IgnoreAlreadyExists(err)
	}
	node.Spec.Taints, node.Spec.Unschedulable = nil, true
	if err := c.Update(ctx, node); err != nil {
		return err
	}
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	node.Status.Capacity = corev1.ResourceList{"nvidia.com/gpu": q}
	node.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": q}
	return c.Status().Update(ctx, node)
}

// waitCount waits until at least n Allocations in ns are in phase, and returns when it saw
// that.
func waitCount(b *testing.B, c client.Client, ns string, n int, phase v1alpha1.AllocationPhase, timeout time.Duration) time.Time {
	b.Helper()
	deadline := time.Now().Add(timeout)
	got, report := 0, time.Now().Add(30*time.Second)
	for time.Now().Before(deadline) {
		var list v1alpha1.AllocationList
		if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		got = 0
		for i := range list.Items {
			if list.Items[i].Status.Phase == phase {
				got++
			}
		}
		if got >= n {
			return time.Now()
		}
		if time.Now().After(report) {
			fmt.Printf("%d of %d Allocations %s\n", got, n, phase)
			report = report.Add(30 * time.Second)
		}
		time.Sleep(250 * time.Millisecond)
	}
	b.Fatalf("%d of %d Allocations %s after %v", got, n, phase, timeout)
	return time.Time{}
}

// cycleStages are the stages of a cycle (scheduling_cycle_stage_seconds).
var cycleStages = []string{"fence_read", "snapshot", "decide", "fence_swap", "act", "writes"}

func histogramOf(b *testing.B, h prometheus.Histogram) *dto.Histogram {
	b.Helper()
	var out dto.Metric
	if err := h.Write(&out); err != nil {
		b.Fatal(err)
	}
	return out.GetHistogram()
}

// quantile is the q-quantile of the observations in h that are not in before, as
// Prometheus's histogram_quantile computes it (util.Histogram).
func quantile(q float64, h, before *dto.Histogram) float64 {
	delta := &dto.Histogram{SampleCount: proto.Uint64(h.GetSampleCount() - before.GetSampleCount())}
	for i, b := range h.GetBucket() {
		delta.Bucket = append(delta.Bucket, &dto.Bucket{
			UpperBound:      proto.Float64(b.GetUpperBound()),
			CumulativeCount: proto.Uint64(b.GetCumulativeCount() - before.GetBucket()[i].GetCumulativeCount()),
		})
	}
	delta.Bucket = append(delta.Bucket, &dto.Bucket{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: delta.SampleCount})
	var sum util.Histogram
	sum.Add(&dto.MetricFamily{Metric: []*dto.Metric{{Histogram: delta}}})
	if sum.Count == 0 {
		return 0
	}
	return sum.Quantile(q)
}
