//go:build realnode

package cluster

import (
	"os"
	"strings"
	"testing"
)

// A real node's bridge keeps its MAC address while pods come and go. A Linux bridge whose
// address was never set takes the lowest of its ports' addresses, so the end of the pod
// whose veth had it changed the gateway's address under the node's other pods: their
// neighbour entries for it went stale, and a pod reading from a server on the node's bridge
// stalled for about 27 s until it resolved the gateway again (seen on a real node in
// TestTorchTrafficOnRealNode, where the storage servers listen on the bridge).
func TestRealNodeBridgeKeepsItsAddress(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: it creates a bridge and veth pairs")
	}
	o := DefaultOptions("")
	o.Name = "rnbridge"
	o.Home = t.TempDir()
	n := o.realNode(0)
	t.Cleanup(func() {
		for _, l := range clearRealNodeBridge(n) {
			t.Errorf("left after clearing: %s", l)
		}
	})
	if err := o.ensureBridge(n); err != nil {
		t.Fatal(err)
	}
	mac := func(dev string) string {
		b, err := os.ReadFile("/sys/class/net/" + dev + "/address")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	before := mac(n.Bridge)
	// Two ports, as two pods' veths; then the one with the lower address goes.
	var ports []string
	for _, p := range []string{"a", "b"} {
		host := n.Bridge[:len(n.Bridge)-1] + "v" + p
		if _, err := run("ip", "link", "add", host, "type", "veth", "peer", "name", host+"p"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = run("ip", "link", "del", host) })
		if _, err := run("ip", "link", "set", host, "master", n.Bridge); err != nil {
			t.Fatal(err)
		}
		ports = append(ports, host)
	}
	if with := mac(n.Bridge); with != before {
		t.Errorf("bridge address %s became %s when two ports were added", before, with)
	}
	low := ports[0]
	if mac(ports[1]) < mac(low) {
		low = ports[1]
	}
	if _, err := run("ip", "link", "del", low); err != nil {
		t.Fatal(err)
	}
	if after := mac(n.Bridge); after != before {
		t.Errorf("bridge address %s became %s when the port with the lowest address went", before, after)
	}
}
