// Command installer renders PickyMan's installer (`make build-installer`): config/default, or
// an overlay of it, with the operator's and the agent's images set, as one YAML stream.
//
//	go run ./hack/installer --operator-image IMG --agent-image AGENT_IMG > dist/install.yaml
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/pickyman/pickyman/config/installer"
)

func main() {
	var o installer.Options
	out := flag.String("o", "-", "file to write (- for standard output)")
	flag.StringVar(&o.Kustomization, "kustomization", "config/default", "kustomization to render")
	flag.StringVar(&o.Operator, "operator-image", "", "operator image (name:tag or name@digest)")
	flag.StringVar(&o.Agent, "agent-image", "", "agent image (name:tag or name@digest)")
	flag.StringVar(&o.TestbedAgent, "testbed-agent-image", "", "testbed agent image, for config/overlays/testbed (name:tag or name@digest)")
	flag.Parse()
	data, err := installer.Render(o)
	if err == nil {
		if *out == "-" {
			_, err = os.Stdout.Write(data)
		} else {
			err = os.WriteFile(*out, data, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "installer:", err)
		os.Exit(1)
	}
}
