// Command pickyman-testbed-agent is the testbed's node agent: one process serves every fake
// (kwok) GPU node of the testbed cluster with the agent's registry, coordinator and metrics,
// and simulates the training of their pods (testbed/agentsim, docs/testbed.md).
package main

import (
	"os"

	"github.com/pickyman/pickyman/testbed/agentsim"
)

func main() { os.Exit(agentsim.Main(os.Args[1:])) }
