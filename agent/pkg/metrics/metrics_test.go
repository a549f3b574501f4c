package metrics

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/pickyman/pickyman/agent/pkg/api"
	"github.com/pickyman/pickyman/agent/pkg/gpu"
	"github.com/pickyman/pickyman/agent/pkg/protocol"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

func TestCollector(t *testing.T) {
	for name, tc := range map[string]struct {
		dcgm                 bool
		util, fbUsed, fbFree string
	}{
		"own names by default":  {util: "pickyman_agent_gpu_utilization_percent", fbUsed: "pickyman_agent_gpu_memory_used_mib", fbFree: "pickyman_agent_gpu_memory_free_mib"},
		"dcgm-exporter's names": {dcgm: true, util: "DCGM_FI_DEV_GPU_UTIL", fbUsed: "DCGM_FI_DEV_FB_USED", fbFree: "DCGM_FI_DEV_FB_FREE"},
	} {
		t.Run(name, func(t *testing.T) {
			testCollector(t, tc.dcgm, tc.util, tc.fbUsed, tc.fbFree)
		})
	}
}

func testCollector(t *testing.T, dcgm bool, util, fbUsed, fbFree string) {
	f, err := gpu.NewFake(gpu.FakeConfig{Node: "n1", Product: "NVIDIA A100-SXM4-40GB", Count: 2, MemoryMiB: 40960})
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Assign(1, "team", "bert-worker-0", "pytorch")
	_ = f.Set(1, 87, 0.25)
	reg := api.NewRegistry(clock.RealClock{}, nil)
	reg.SetPod(api.Pod{UID: "u", Namespace: "team", Name: "bert-worker-0", Resume: agentv1alpha1.ResumePoint{Epoch: 2}})
	c := New(func() map[string]gpu.Backend { return map[string]gpu.Backend{"n1": f} }, reg)
	c.DCGMNames = dcgm
	c.APIError(protocol.ErrForbidden)
	c.Acked(api.Pod{Namespace: "team"}, agentv1alpha1.CheckpointAck{})
	devs, _ := f.Devices()
	reg2 := prometheus.NewPedanticRegistry()
	if err := reg2.Register(c); err != nil {
		t.Fatal(err)
	}
	fams, err := reg2.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// series renders every sample as name{label=value,...} value.
	var got []string
	for _, mf := range fams {
		for _, m := range mf.GetMetric() {
			var lv []string
			for _, l := range m.GetLabel() {
				lv = append(lv, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			got = append(got, fmt.Sprintf("%s{%s} %g", mf.GetName(), strings.Join(lv, ","), v))
		}
	}
	labels := func(i int, pod string) string {
		ns, ctr := "", ""
		if pod != "" {
			ns, ctr = "team", "pytorch"
		}
		return fmt.Sprintf("Hostname=n1,UUID=%s,container=%s,gpu=%d,modelName=NVIDIA A100-SXM4-40GB,namespace=%s,pod=%s", devs[i].UUID, ctr, i, ns, pod)
	}
	want := []string{
		fbFree + "{" + labels(0, "") + "} 40960",
		fbFree + "{" + labels(1, "bert-worker-0") + "} 30720",
		fbUsed + "{" + labels(0, "") + "} 0",
		fbUsed + "{" + labels(1, "bert-worker-0") + "} 10240",
		util + "{" + labels(0, "") + "} 0",
		util + "{" + labels(1, "bert-worker-0") + "} 87",
		"pickyman_agent_api_errors_total{code=forbidden} 1",
		"pickyman_agent_checkpoint_acks_total{namespace=team} 1",
		"pickyman_agent_gpu_backend_up{Hostname=n1} 1",
		"pickyman_agent_gpus{Hostname=n1} 2",
		"pickyman_agent_pod_epoch_seconds{namespace=team,pod=bert-worker-0} 0",
		"pickyman_agent_pod_epochs_done{namespace=team,pod=bert-worker-0} 2",
		"pickyman_agent_pod_read_bytes{namespace=team,pod=bert-worker-0} 0",
		"pickyman_agent_pod_read_rate_bytes_per_second{namespace=team,pod=bert-worker-0} 0",
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}
