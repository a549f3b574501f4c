package policies_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/operator/pkg/policies"
)

// baselines are the policies of this package's own tests; others may be registered too.
var baselines = []string{"fifo", "sjf", "srtf", "tiresias", "kueue"}

func TestNames(t *testing.T) {
	names := policies.Names()
	if diff := cmp.Diff(baselines, names[:min(len(baselines), len(names))]); diff != "" {
		t.Errorf("Names() starts (-want +got):\n%s", diff)
	}
	for _, n := range names {
		p, err := policies.New(n, policies.Options{})
		if err != nil {
			t.Fatalf("New(%q): %v", n, err)
		}
		if p.Name() != n {
			t.Errorf("New(%q).Name() = %q", n, p.Name())
		}
	}
}

func TestNewErrors(t *testing.T) {
	cases := map[string]struct {
		name    string
		params  map[string]string
		wantErr string
	}{
		"unknown policy":      {name: "lottery", wantErr: `unknown policy "lottery"`},
		"unknown parameter":   {name: "sjf", params: map[string]string{"backfill": "true"}, wantErr: "unknown parameters backfill"},
		"bad bool":            {name: "fifo", params: map[string]string{"backfill": "maybe"}, wantErr: "backfill"},
		"bad thresholds":      {name: "tiresias", params: map[string]string{"thresholds": "1h,1m"}, wantErr: "increasing"},
		"unparsable duration": {name: "tiresias", params: map[string]string{"thresholds": "soon"}, wantErr: "thresholds"},
		"bad starve limit":    {name: "tiresias", params: map[string]string{"starvelimit": "x"}, wantErr: "starvelimit"},
		"good parameters":     {name: "tiresias", params: map[string]string{"thresholds": "3600, 10h", "starvelimit": "8"}},
		"backfill":            {name: "fifo", params: map[string]string{"backfill": "true"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := policies.New(tc.name, policies.Options{Params: tc.params})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("New: error %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}
