package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/testbed/cluster"
	"github.com/pickyman/pickyman/testbed/replay"
	"github.com/pickyman/pickyman/traces"
)

// flagCompletion completes one flag of one command, named by its path under the root.
type flagCompletion struct {
	command []string
	flag    string
	values  func() []string
	// list completes a comma-separated list: the word after the last comma.
	list bool
	// alone are values of a list that stand for a whole list, offered only as its first word.
	alone []string
}

// flagCompletions are the flags whose values the shell completes from what pickyman knows:
// registered policies, trace formats, replay job kinds and GPU models. Flags that take a
// file keep the shell's file completion.
func flagCompletions() []flagCompletion {
	formats := func() []string {
		out := make([]string, len(traces.Formats))
		for i, f := range traces.Formats {
			out[i] = string(f)
		}
		return out
	}
	return []flagCompletion{
		{command: []string{"simulate"}, flag: "policies", values: policies.Names, list: true, alone: []string{allPolicies}},
		{command: []string{"simulate"}, flag: "format", values: formats},
		{command: []string{"replay"}, flag: "policy", values: policies.Names},
		{command: []string{"replay"}, flag: "format", values: formats},
		{command: []string{"replay"}, flag: "kind", values: replay.Kinds},
		{command: []string{"trace", "inspect"}, flag: "format", values: formats},
		{command: []string{"cluster", "up"}, flag: "gpu-model", values: cluster.KnownGPUModels},
		{command: []string{"cluster", "nodes"}, flag: "gpu-model", values: cluster.KnownGPUModels},
	}
}

// registerCompletions registers flagCompletions on root's command tree. A command or flag
// that is not there is a mistake in this file, which every test that builds the root finds.
func registerCompletions(root *cobra.Command) {
	for _, fc := range flagCompletions() {
		cmd, rest, err := root.Find(fc.command)
		if err != nil || len(rest) > 0 || cmd == root {
			panic(fmt.Sprintf("completion: no command %q", strings.Join(fc.command, " ")))
		}
		complete := valueCompletions(fc.values)
		if fc.list {
			complete = listCompletions(fc.values, fc.alone)
		}
		must(cmd.RegisterFlagCompletionFunc(fc.flag, complete))
	}
}

// fixedCompletions completes a flag with a fixed list of values.
func fixedCompletions(values []string) cobra.CompletionFunc {
	return valueCompletions(func() []string { return values })
}

// valueCompletions completes a flag with the values of the moment.
func valueCompletions(values func() []string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values(), cobra.ShellCompDirectiveNoFileComp
	}
}

// listCompletions completes the last element of a comma-separated list: "fifo,pi" offers
// "fifo,pickyman" and the other values not yet in the list, each with the list before it.
// The values of alone are offered for the first element only.
func listCompletions(values func() []string, alone []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		head, last := "", toComplete
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			head, last = toComplete[:i+1], toComplete[i+1:]
		}
		have := map[string]bool{}
		for _, v := range strings.Split(head, ",") {
			have[strings.TrimSpace(v)] = true
		}
		var out []string
		if head == "" {
			for _, v := range alone {
				if strings.HasPrefix(v, last) {
					out = append(out, v)
				}
			}
		}
		for _, v := range values() {
			if !have[v] && strings.HasPrefix(v, last) {
				out = append(out, head+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// must panics on an error that only a mistake in this package causes (a completion for a
// flag that does not exist, or registered twice).
func must(err error) {
	if err != nil {
		panic(err)
	}
}
