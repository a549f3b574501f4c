package cli

import "github.com/spf13/cobra"

func newSimulateCommand() *cobra.Command {
	return &cobra.Command{Use: "simulate", Short: "not built yet", Hidden: true}
}
