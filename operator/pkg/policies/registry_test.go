package policies_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/overhead"
	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/operator/pkg/policies/pickyman"
)

// baselines are the policies of this package's own tests; others may be registered too.
var baselines = []string{"fifo", "sjf", "srtf", "tiresias", "kueue"}

func TestNames(t *testing.T) {
	names := policies.Names()
	if diff := cmp.Diff(baselines, names[:min(len(baselines), len(names))]); diff != "" {
		t.Errorf("Names() starts (-want +got):\n%s", diff)
	}
	for _, n := range names {
		p, err := policies.ByName(n)
		if err != nil {
			t.Fatalf("ByName(%q): %v", n, err)
		}
		if p.Name() != n {
			t.Errorf("ByName(%q).Name() = %q", n, p.Name())
		}
	}
}

func TestNewErrors(t *testing.T) {
	hours := func(hs ...int) []metav1.Duration {
		var out []metav1.Duration
		for _, h := range hs {
			out = append(out, metav1.Duration{Duration: time.Duration(h) * time.Hour})
		}
		return out
	}
	cases := map[string]struct {
		policy  configv1.Policy
		wantErr string
	}{
		"unknown policy":          {policy: configv1.Policy{Name: "lottery"}, wantErr: `policy.name: Unsupported value: "lottery"`},
		"arguments of another":    {policy: configv1.Policy{Name: "sjf", FIFO: &configv1.FIFOArgs{Backfill: true}}, wantErr: "policy.fifo: Forbidden: policy sjf does not take fifo arguments"},
		"pickyman's on tiresias":  {policy: configv1.Policy{Name: "tiresias", PickyMan: &configv1.PickyManArgs{}}, wantErr: "policy.pickyman: Forbidden"},
		"bad thresholds":          {policy: configv1.Policy{Name: "tiresias", Tiresias: &configv1.TiresiasArgs{Thresholds: hours(10, 1)}}, wantErr: "policy.tiresias.thresholds[1]"},
		"bad starve limit":        {policy: configv1.Policy{Name: "tiresias", Tiresias: &configv1.TiresiasArgs{StarveLimit: -1}}, wantErr: "policy.tiresias.starveLimit"},
		"bad gain on an ablation": {policy: configv1.Policy{Name: "pickyman-blind", PickyMan: &configv1.PickyManArgs{Gain: ptr.To(-1.0)}}, wantErr: "policy.pickyman.gain"},
		"good tiresias":           {policy: configv1.Policy{Name: "tiresias", Tiresias: &configv1.TiresiasArgs{Thresholds: hours(1, 10), StarveLimit: 8}}},
		"backfill":                {policy: configv1.Policy{Name: "fifo", FIFO: &configv1.FIFOArgs{Backfill: true}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := policies.New(tc.policy, policies.Options{})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("New: error %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

// TestPickyManArgs checks that the arguments, the protection and the overhead sections of
// the operator's configuration reach the policy, and that an ablation keeps what makes it
// one.
func TestPickyManArgs(t *testing.T) {
	conf := &configv1.Configuration{Policy: configv1.Policy{Name: "pickyman-now", PickyMan: &configv1.PickyManArgs{
		Aging: ptr.To(0.25), Promote: &metav1.Duration{}, QueueWait: ptr.To(true), Smoothing: "ewma", MaxScan: ptr.To[int32](7),
	}}}
	conf.Default()
	conf.Protection.MinRunAfterResume.Duration = 5 * time.Minute
	conf.Protection.MaxPreemptions = 2
	conf.Overhead.WriteBytesPerSecond = 3e10
	p, err := policies.New(conf.Policy, policies.Options{Protection: &conf.Protection, Overhead: &conf.Overhead})
	if err != nil {
		t.Fatal(err)
	}
	pm, ok := p.(*pickyman.Policy)
	if !ok {
		t.Fatalf("pickyman-now is a %T", p)
	}
	want := pickyman.DefaultOptions()
	want.Variant = pickyman.Now
	want.Aging, want.Promote, want.QueueWait, want.MaxScan = 0.25, 0, true, 7
	want.Predictor.Smoothing = "ewma"
	want.Protect, want.Budget = 5*time.Minute, 2
	want.Overhead = overhead.Params{Start: 50 * time.Second, WriteBW: 3e10, ReadBW: 2 << 30, Grace: 30 * time.Second}
	got := pm.Options()
	got.Store = nil
	if d := cmp.Diff(want, got, cmp.AllowUnexported(pickyman.Options{})); d != "" {
		t.Errorf("options (-want +got):\n%s", d)
	}
	// No protection section: the policy's own defaults, and no budget from a zero maximum.
	conf.Protection.MaxPreemptions = 0
	p, err = policies.New(configv1.Policy{Name: "pickyman"}, policies.Options{Protection: &conf.Protection})
	if err != nil {
		t.Fatal(err)
	}
	if o := p.(*pickyman.Policy).Options(); o.Budget != pickyman.DefaultOptions().Budget || o.Overhead != overhead.DefaultParams() {
		t.Errorf("budget %d, overhead %+v: want the policy's defaults", o.Budget, o.Overhead)
	}
}
