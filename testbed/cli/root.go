package cli

import (
	"github.com/spf13/cobra"
)

// NewRootCommand returns the pickyman command with every subcommand registered, and the
// shell completions of their flags' values (`pickyman completion bash|zsh|fish|powershell`
// writes the script that uses them).
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "pickyman",
		Short:         "PickyMan testbed: simulate scheduling policies on GPU-cluster traces and run the local testbed cluster",
		Version:       readVersion().line(),
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.SetVersionTemplate("pickyman {{.Version}}\n")
	root.AddCommand(
		newSimulateCommand(),
		newTraceCommand(),
		newClusterCommand(),
		newReplayCommand(),
		newStorageCommand(),
		newVersionCommand(),
	)
	registerCompletions(root)
	return root
}
