// Command pause is the sandbox ("pause") container of the testbed's real nodes: it holds a
// pod's namespaces open until it is told to stop, as Kubernetes' build/pause/linux/pause.c
// does. Nothing can be pulled on the testbed, so the real-node tests build it with
// CGO_ENABLED=0 and import it into the node's containerd as an image archive
// (testbed/cluster/realnode.go).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		os.Stdout.WriteString("pause (pickyman testbed)\n")
		return
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		// PID 1 of a pod that shares its process namespace reaps orphans.
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
