package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Status is what `pickyman cluster status` reports.
type Status struct {
	Name       string
	Exists     bool
	Kubeconfig string
	// Processes by component, with whether each is alive.
	Processes map[string]ProcessStatus
	APIReady  bool
	Nodes     int
	ReadyNode int
	GPUs      int64
	// GPUsByProduct counts allocatable GPUs per nvidia.com/gpu.product.
	GPUsByProduct map[string]int64
	// StorageURL is the dataset store's URL when it runs.
	StorageURL string
}

// ProcessStatus is one process of the cluster.
type ProcessStatus struct {
	Pid   int
	Alive bool
	Ports []int
}

// GetStatus inspects the cluster without changing it.
func GetStatus(ctx context.Context, o Options) (*Status, error) {
	s := &Status{Name: o.Name, Kubeconfig: o.Kubeconfig(), Processes: map[string]ProcessStatus{}}
	if _, err := os.Stat(o.Workdir()); os.IsNotExist(err) {
		return s, nil
	}
	s.Exists = true
	pids := o.recordedPids(false)
	for name, pid := range pids {
		ps := ProcessStatus{Pid: pid, Alive: alive(pid)}
		if ps.Alive {
			ps.Ports = listeningPorts(pid)
			sort.Ints(ps.Ports)
		}
		s.Processes[name] = ps
	}
	if addr := o.StorageAddr(); addr != "" {
		s.StorageURL = "http://" + addr + "/"
	}
	c, err := NewClients(o.Kubeconfig())
	if err != nil {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if c.WaitReady(ctx, 2*time.Second) != nil {
		return s, nil
	}
	s.APIReady = true
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	s.GPUsByProduct = map[string]int64{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		s.Nodes++
		if NodeReady(n) {
			s.ReadyNode++
		}
		q := n.Status.Allocatable[GPUResource]
		s.GPUs += q.Value()
		s.GPUsByProduct[n.Labels[LabelGPUProduct]] += q.Value()
	}
	return s, nil
}

// Print writes the status as a few lines of text.
func (s *Status) Print(w io.Writer) {
	if !s.Exists {
		fmt.Fprintf(w, "cluster %s: not created\n", s.Name)
		return
	}
	fmt.Fprintf(w, "cluster %s\nkubeconfig %s\napi-server ready: %v\n", s.Name, s.Kubeconfig, s.APIReady)
	names := make([]string, 0, len(s.Processes))
	for n := range s.Processes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.Processes[n]
		state := "stopped"
		if p.Alive {
			state = "running"
		}
		fmt.Fprintf(w, "  %-24s pid %-7d %-8s ports %v\n", n, p.Pid, state, p.Ports)
	}
	if s.StorageURL != "" {
		fmt.Fprintf(w, "datasets at %s\n", s.StorageURL)
	}
	if s.APIReady {
		fmt.Fprintf(w, "nodes %d (%d Ready), nvidia.com/gpu %d\n", s.Nodes, s.ReadyNode, s.GPUs)
		products := make([]string, 0, len(s.GPUsByProduct))
		for p := range s.GPUsByProduct {
			products = append(products, p)
		}
		sort.Strings(products)
		for _, p := range products {
			if p != "" {
				fmt.Fprintf(w, "  %-28s %d GPUs\n", p, s.GPUsByProduct[p])
			}
		}
	}
}
