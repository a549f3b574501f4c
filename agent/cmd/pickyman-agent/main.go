// Command pickyman-agent is the PickyMan node agent: it reads the node's GPUs, serves the
// local checkpoint API to training processes, and coordinates checkpoints with the operator
// through pod annotations. With --testbed it serves every fake node of the testbed cluster
// and simulates their training. See docs/agent.md.
package main

import (
	"os"

	"github.com/pickyman/pickyman/agent/pkg/app"
)

func main() { os.Exit(app.Main(os.Args[1:])) }
