// Command pickyman-agent is the PickyMan node agent: it reads the node's GPUs, serves the
// local checkpoint API to training processes, and coordinates checkpoints with the operator
// through pod annotations. See docs/agent.md (the testbed's simulated agent is
// testbed/cmd/pickyman-testbed-agent).
package main

import (
	"os"

	"github.com/pickyman/pickyman/agent/pkg/app"
)

func main() { os.Exit(app.Main(os.Args[1:])) }
