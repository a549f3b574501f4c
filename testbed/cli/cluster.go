package cli

import "github.com/spf13/cobra"

func newClusterCommand() *cobra.Command {
	return &cobra.Command{Use: "cluster", Short: "not built yet", Hidden: true}
}
