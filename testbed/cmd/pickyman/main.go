// Command pickyman is the testbed's command line: it simulates policies on traces,
// generates traces, and brings the local Kubernetes testbed cluster up and down.
package main

import (
	"os"

	"github.com/pickyman/pickyman/testbed/cli"
)

func main() {
	if err := cli.NewRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
