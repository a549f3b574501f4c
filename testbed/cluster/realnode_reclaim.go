package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A cluster whose real-node processes died without `down` (the machine was restarted, or
// the process that ran it was killed) leaves its bridges, guard rule, mounts, cgroups and
// runtime directory on the host; its bridges hold addresses in RealNodePodCIDR, so no other
// cluster could start real nodes. reclaimDeadRealNodes removes what such clusters left, and
// only theirs: a cluster counts as dead when no process on the host names its runtime
// directory (every kubelet and shim does, in its command line) and no containerd answers on
// one of its sockets.

// deadRealNodeClusters lists the ids (the 6-character prefix of Options.realNodeID that the
// bridges carry) of the clusters other than this one that left real-node state on the host
// and run no process.
func (o Options) deadRealNodeClusters() []string {
	own := o.realNodeID()[:6]
	found := map[string]bool{}
	if entries, err := os.ReadDir(realRunBase); err == nil {
		for _, e := range entries {
			if e.IsDir() && len(e.Name()) >= 6 {
				found[e.Name()[:6]] = true
			}
		}
	}
	for _, b := range realNodeBridges() {
		found[b[len("pmrn"):len("pmrn")+6]] = true
	}
	delete(found, own)
	var out []string
	for id := range found {
		if !realNodeClusterLive(id) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// realNodeBridges lists the host's interfaces named like real-node bridges.
func realNodeBridges() []string {
	out, err := run("ip", "-o", "link", "show", "type", "bridge")
	if err != nil {
		return nil
	}
	var bridges []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		dev, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if strings.HasPrefix(dev, "pmrn") && len(dev) > len("pmrn")+6 {
			bridges = append(bridges, dev)
		}
	}
	return bridges
}

// realNodeClusterLive says whether a process of the cluster with id (6-character prefix)
// runs: one whose command line names its runtime directory, or a containerd answering on a
// socket in it.
func realNodeClusterLive(id string) bool {
	live := false
	prefix := realRunBase + "/" + id
	eachProcess(func(_ int, cmdline string) {
		if strings.Contains(cmdline, prefix) {
			live = true
		}
	})
	if live {
		return true
	}
	socks, _ := filepath.Glob(filepath.Join(realRunBase, id+"*", "*", "containerd.sock"))
	for _, s := range socks {
		if c, err := net.DialTimeout("unix", s, time.Second); err == nil {
			_ = c.Close()
			return true
		}
	}
	return false
}

// reclaimDeadRealNodes removes what the dead clusters (deadRealNodeClusters) left on the
// host: each node's mounts, cgroup, bridge and runtime directory, and their guard rules.
// It fails naming what it could not remove.
func (o Options) reclaimDeadRealNodes() error {
	var left []string
	for _, id := range o.deadRealNodeClusters() {
		left = append(left, reclaimRealNodeCluster(id)...)
	}
	if len(left) > 0 {
		sort.Strings(left)
		return fmt.Errorf("real nodes: a stopped cluster's real nodes left on this machine could not be removed: %s", strings.Join(left, "; "))
	}
	return nil
}

// reclaimRealNodeCluster removes the host state of the dead cluster with id (6-character
// prefix of its realNodeID).
func reclaimRealNodeCluster(id string) []string {
	var left []string
	nodes := map[string]realNode{} // by bridge
	roots, _ := filepath.Glob(filepath.Join(realRunBase, id+"*"))
	for _, root := range roots {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if i, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
				n := hostRealNode(filepath.Base(root), i)
				nodes[n.Bridge] = n
			}
		}
	}
	for _, b := range realNodeBridges() {
		if strings.HasPrefix(b, "pmrn"+id) {
			if _, ok := nodes[b]; !ok {
				i, _ := strconv.Atoi(b[len("pmrn")+6:])
				// Known by its bridge alone: no runtime directory or cgroup to name.
				nodes[b] = realNode{Index: i, Bridge: b}
			}
		}
	}
	for _, n := range nodes {
		if n.Name == "" {
			n.Name = realNodeNameFromAlias(n.Bridge, n.Index)
		}
		left = append(left, clearRealNode(n)...)
	}
	left = append(left, deleteRulesMatching("pmrn"+id)...)
	for _, root := range roots {
		if err := os.RemoveAll(root); err != nil {
			left = append(left, fmt.Sprintf("runtime directory %s (%v)", root, err))
		}
	}
	return left
}

// realNodeNameFromAlias is the node name that bridge's alias (realNodeComment:<cluster>)
// gives, or "" when it has none.
func realNodeNameFromAlias(bridge string, i int) string {
	out, err := run("ip", "-o", "link", "show", "dev", bridge)
	if err != nil {
		return ""
	}
	_, after, ok := strings.Cut(out, "alias "+realNodeComment+":")
	if !ok {
		return ""
	}
	cluster := strings.Fields(after)
	if len(cluster) == 0 {
		return ""
	}
	// ip -o ends each folded line with a backslash.
	return fmt.Sprintf("%s-node-%d", strings.TrimRight(cluster[0], "\\"), i)
}

// deleteRulesMatching deletes every iptables and ip6tables rule whose saved form contains
// s, and returns the ones it could not delete.
func deleteRulesMatching(s string) []string {
	var left []string
	for _, ipt := range []string{"iptables", "ip6tables"} {
		out, err := run(ipt + "-save")
		if err != nil {
			continue
		}
		table := "filter"
		for _, line := range strings.Split(out, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "*") {
				table = line[1:]
				continue
			}
			if !strings.HasPrefix(line, "-A ") || !strings.Contains(line, s) {
				continue
			}
			args, err := splitSavedRule(line[len("-A "):])
			if err == nil {
				_, err = run(ipt, append([]string{"-w", "-t", table, "-D"}, args...)...)
			}
			if err != nil {
				left = append(left, fmt.Sprintf("%s -t %s %s (%v)", ipt, table, line, err))
			}
		}
	}
	return left
}

// splitSavedRule splits a rule as iptables-save writes it into arguments: fields separated
// by spaces, where a double-quoted field may hold spaces and \" and \\ escapes.
func splitSavedRule(line string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inQuote, inField := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQuote && c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case c == '"':
			inQuote = !inQuote
			inField = true
		case c == ' ' && !inQuote:
			if inField {
				args = append(args, cur.String())
				cur.Reset()
				inField = false
			}
		default:
			cur.WriteByte(c)
			inField = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated quote in %q", line)
	}
	if inField {
		args = append(args, cur.String())
	}
	return args, nil
}
