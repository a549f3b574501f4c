package app

import (
	"strings"
	"testing"
)

func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    int64
		wantErr string
	}{
		{name: "unset", env: nil, want: 0},
		{name: "no limit", env: map[string]string{EnvMemoryLimit: "0"}, want: 0},
		{name: "512Mi", env: map[string]string{EnvMemoryLimit: "536870912"}, want: 483183820},
		{name: "GOMEMLIMIT wins", env: map[string]string{EnvMemoryLimit: "536870912", "GOMEMLIMIT": "300MiB"}, want: 0},
		{name: "not a number", env: map[string]string{EnvMemoryLimit: "512Mi"}, wantErr: `PICKYMAN_MEMORY_LIMIT="512Mi": want the container's memory limit in bytes`},
		{name: "negative", env: map[string]string{EnvMemoryLimit: "-1"}, wantErr: "want the container's memory limit in bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MemoryLimit(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("MemoryLimit = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
