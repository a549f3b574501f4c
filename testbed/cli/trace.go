package cli

import "github.com/spf13/cobra"

func newTraceCommand() *cobra.Command {
	return &cobra.Command{Use: "trace", Short: "not built yet", Hidden: true}
}
