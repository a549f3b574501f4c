package cli

import (
	"github.com/spf13/cobra"
)

// NewRootCommand returns the pickyman command with every subcommand registered.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "pickyman",
		Short:         "PickyMan testbed: simulate scheduling policies on GPU-cluster traces and run the local testbed cluster",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.AddCommand(
		newSimulateCommand(),
		newTraceCommand(),
		newClusterCommand(),
		newReplayCommand(),
	)
	return root
}
