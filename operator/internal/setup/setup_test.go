package setup

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/policies"
)

func TestPolicyParams(t *testing.T) {
	conf := func(name string, params map[string]string) *configv1.Configuration {
		c := &configv1.Configuration{Policy: configv1.Policy{Name: name, Params: params}}
		c.Default()
		c.Protection.MinRunAfterResume = metav1.Duration{Duration: 5 * time.Second}
		c.Protection.MaxPreemptions = 3
		c.Overhead.ContainerStart = metav1.Duration{Duration: time.Second}
		c.Overhead.Warmup = metav1.Duration{Duration: 2 * time.Second}
		c.Overhead.WriteBytesPerSecond = 3e10
		return c
	}
	cases := []struct {
		name string
		conf *configv1.Configuration
		want map[string]string
	}{
		{"pickyman takes protection and overhead", conf("pickyman", nil), map[string]string{
			"protect": "5s", "budget": "3", "start": "3s", "writebw": "3e+10", "readbw": "2.147483648e+09", "grace": "30s"}},
		{"explicit parameters win", conf("pickyman-blind", map[string]string{"protect": "1m", "gain": "2"}), map[string]string{
			"protect": "1m", "gain": "2", "budget": "3", "start": "3s", "writebw": "3e+10", "readbw": "2.147483648e+09", "grace": "30s"}},
		{"other policies get their own parameters only", conf("tiresias", map[string]string{"starvelimit": "2"}), map[string]string{"starvelimit": "2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PolicyParams(tc.conf)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("params (-want +got):\n%s", d)
			}
			// Every translated parameter is one the policy knows.
			if _, err := policies.New(tc.conf.Policy.Name, policies.Options{Params: got}); err != nil {
				t.Errorf("policy rejects the parameters: %v", err)
			}
		})
	}
}
