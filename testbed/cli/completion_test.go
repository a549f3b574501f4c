package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/testbed/replay"
	"github.com/pickyman/pickyman/traces"
)

// complete runs cobra's hidden completion command and returns the values it offers.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	out, _, err := runCLI(t, append([]string{"__complete"}, args...)...)
	if err != nil {
		t.Fatalf("__complete %v: %v", args, err)
	}
	var values []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, ":") { // the last line is the directive
			values = append(values, line)
		}
	}
	return values
}

func TestFlagCompletions(t *testing.T) {
	tests := map[string]struct {
		args []string
		want []string
		not  []string
	}{
		"simulate policies": {args: []string{"simulate", "--policies", ""}, want: append(policies.Names(), "all")},
		"simulate policies, 2nd": {args: []string{"simulate", "--policies", "fifo,pi"}, want: []string{"fifo,pickyman", "fifo,pickyman-blind"},
			not: []string{"fifo,fifo", "fifo,tiresias", "fifo,all"}},
		"simulate policies, all": {args: []string{"simulate", "--policies", "fifo,"}, want: []string{"fifo,pickyman"}, not: []string{"fifo,all", "all"}},
		"simulate format":        {args: []string{"simulate", "--format", ""}, want: []string{string(traces.FormatPickyman), "philly-csv", "tiresias"}},
		"replay policy":          {args: []string{"replay", "--policy", ""}, want: []string{"pickyman", "fifo"}},
		"replay format":          {args: []string{"replay", "--format", "phil"}, want: []string{"philly-csv", "philly-json"}},
		"replay kind":            {args: []string{"replay", "--kind", ""}, want: replay.Kinds()},
		"trace inspect format":   {args: []string{"trace", "inspect", "x.csv", "--format", ""}, want: []string{"helios", "pai"}},
		"trace inspect output":   {args: []string{"trace", "inspect", "x.csv", "-o", ""}, want: []string{"text", "json"}},
		"cluster status output":  {args: []string{"cluster", "status", "--output", ""}, want: []string{"text", "json"}},
		"cluster up gpu model":   {args: []string{"cluster", "up", "--gpu-model", ""}, want: []string{"A100", "H100", "V100"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := complete(t, tc.args...)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("completions %v lack %q", got, w)
				}
			}
			for _, n := range tc.not {
				if slices.Contains(got, n) {
					t.Errorf("completions %v offer %q", got, n)
				}
			}
		})
	}
}

// TestCompletionCommand: cobra's completion command writes a script for each shell.
func TestCompletionCommand(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_pickyman", "zsh": "#compdef pickyman",
		"fish": "complete -c pickyman", "powershell": "Register-ArgumentCompleter"} {
		out, _, err := runCLI(t, "completion", shell)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("completion %s: %v; output lacks %q", shell, err, want)
		}
	}
}
