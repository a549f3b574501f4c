package traces

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NodePool is a set of identical GPU nodes.
type NodePool struct {
	Count    int
	GPUs     int32
	GPUModel string
}

// Cluster is a cluster description.
type Cluster struct {
	Pools []NodePool
	// Source is the spec string or file it came from.
	Source string
}

// Nodes is the number of nodes over all pools.
func (c Cluster) Nodes() int {
	n := 0
	for _, p := range c.Pools {
		n += p.Count
	}
	return n
}

// GPUs is the number of GPUs over all pools.
func (c Cluster) GPUs() int {
	n := 0
	for _, p := range c.Pools {
		n += p.Count * int(p.GPUs)
	}
	return n
}

// String writes the cluster as a spec ParseCluster reads back.
func (c Cluster) String() string {
	parts := make([]string, len(c.Pools))
	for i, p := range c.Pools {
		parts[i] = fmt.Sprintf("%dx%d", p.Count, p.GPUs)
		if p.GPUModel != "" {
			parts[i] += ":" + p.GPUModel
		}
	}
	return strings.Join(parts, ",")
}

// ParseCluster reads "NODESxGPUS[:MODEL]" (pools joined by ",") or a cluster file: a
// Tiresias cluster spec (num_switch,num_node_p_switch,num_gpu_p_node,...), an Alibaba v2023
// openb node list (sn,cpu_milli,memory_mib,gpu,model), or a Philly cluster_machine_list
// (machineId,number of GPUs,single GPU mem). A spec naming an existing file is read as a file;
// a spec that is not a pool list and looks like a path (it has a directory separator or a
// file extension) is a missing file, and the error says so.
func ParseCluster(spec string) (Cluster, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Cluster{}, errors.New("traces: empty cluster spec")
	}
	st, statErr := os.Stat(spec)
	if statErr == nil && !st.IsDir() {
		return readClusterFile(spec)
	}
	c := Cluster{Source: spec}
	for i, part := range strings.Split(spec, ",") {
		p, err := parsePool(strings.TrimSpace(part))
		if err == nil {
			c.Pools = append(c.Pools, p)
			continue
		}
		switch {
		case statErr == nil: // a directory
			return Cluster{}, fmt.Errorf("traces: cluster file %s: a directory, not a file", spec)
		case looksLikePath(spec) && errors.Is(statErr, fs.ErrNotExist):
			return Cluster{}, fmt.Errorf("traces: cluster file %s: no such file (want a cluster file or NODESxGPUS[:MODEL] pools, e.g. 32x8:V100)", spec)
		case looksLikePath(spec):
			return Cluster{}, fmt.Errorf("traces: cluster file %s: %w", spec, statErr)
		}
		return Cluster{}, fmt.Errorf("traces: cluster spec %q: pool %d %q: %w (want NODESxGPUS[:MODEL], e.g. 32x8:V100, or a cluster file)", spec, i+1, part, err)
	}
	return c, nil
}

// looksLikePath reports whether a cluster spec that is not a pool list was meant as a file:
// it has a directory separator or ends in a file extension of letters (".csv").
func looksLikePath(spec string) bool {
	if strings.ContainsAny(spec, `/\`) {
		return true
	}
	ext := filepath.Ext(spec)
	if len(ext) < 2 {
		return false
	}
	return strings.IndexFunc(ext[1:], func(r rune) bool { return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') }) < 0
}

func parsePool(s string) (NodePool, error) {
	dims, model, _ := strings.Cut(s, ":")
	n, g, ok := strings.Cut(strings.ToLower(dims), "x")
	if !ok {
		return NodePool{}, errors.New("missing 'x'")
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count <= 0 || count > 1<<20 {
		return NodePool{}, fmt.Errorf("node count %q is not a positive integer", n)
	}
	gpus, err := strconv.Atoi(strings.TrimSpace(g))
	if err != nil || gpus <= 0 || gpus > 1<<10 {
		return NodePool{}, fmt.Errorf("GPUs per node %q is not a positive integer", g)
	}
	return NodePool{Count: count, GPUs: int32(gpus), GPUModel: strings.TrimSpace(model)}, nil
}

// Cluster-file headers.
var (
	tiresiasClusterColumns = []string{"num_switch", "num_node_p_switch", "num_gpu_p_node"}
	openbNodeColumns       = []string{"sn", "gpu", "model"}
	phillyMachineColumns   = []string{"machineid", "number of gpus"}
)

func isClusterHeader(cols map[string]bool) bool {
	return hasAll(cols, tiresiasClusterColumns) || hasAll(cols, openbNodeColumns) || hasAll(cols, phillyMachineColumns)
}

func readClusterFile(path string) (Cluster, error) {
	f, err := os.Open(path)
	if err != nil {
		return Cluster{}, fmt.Errorf("traces: %w", err)
	}
	defer f.Close()
	return parseClusterFile(f, filepath.Base(path), path)
}

// parseClusterFile reads a cluster file. Nodes group into pools by (GPUs, model) in order of
// first appearance; nodes with no GPU are left out.
func parseClusterFile(r io.Reader, name, source string) (Cluster, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	hdr, err := cr.Read()
	if err != nil {
		return Cluster{}, fmt.Errorf("traces: cluster file %s: %w", name, csvError(name, err))
	}
	cols := map[string]bool{}
	s := row{file: name, idx: map[string]int{}}
	for i, h := range hdr {
		k := normalizeHeader(h, i)
		cols[k] = true
		s.idx[k] = i
	}
	var gpuCol, modelCol, countCol string
	perRow := func(*row) int64 { return 1 }
	switch {
	case hasAll(cols, tiresiasClusterColumns):
		gpuCol = "num_gpu_p_node"
		perRow = func(r *row) int64 {
			sw, nodes := r.int("num_switch"), r.int("num_node_p_switch")
			if sw <= 0 || nodes <= 0 || sw > 1<<20 || nodes > 1<<20 {
				return 0
			}
			return sw * nodes
		}
		countCol = "num_node_p_switch"
	case hasAll(cols, openbNodeColumns):
		gpuCol, modelCol = "gpu", "model"
	case hasAll(cols, phillyMachineColumns):
		gpuCol, modelCol = "number of gpus", "single gpu mem"
	default:
		return Cluster{}, fmt.Errorf("traces: cluster file %s: unknown header %q (want a Tiresias cluster spec, an openb node list or a Philly machine list)", name, strings.Join(hdr, ","))
	}
	c := Cluster{Source: source}
	index := map[NodePool]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Cluster{}, csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		s.line, s.rec, s.err = line, rec, nil
		if len(rec) != len(hdr) {
			return Cluster{}, &ParseError{File: name, Line: line, Err: fmt.Errorf("expected %d fields, got %d", len(hdr), len(rec))}
		}
		gpus := s.count(gpuCol)
		n := perRow(&s)
		if s.err == nil && (gpus < 0 || gpus > 1<<10) {
			s.failf(gpuCol, "GPUs per node %d out of range", gpus)
		}
		if s.err == nil && (n <= 0 || n > 1<<20) {
			s.failf(countCol, "node count %d is not positive", n)
		}
		if s.err != nil {
			return Cluster{}, s.err
		}
		if gpus == 0 {
			continue
		}
		key := NodePool{GPUs: int32(gpus)}
		if modelCol != "" {
			key.GPUModel = s.str(modelCol)
		}
		i, ok := index[key]
		if !ok {
			i = len(c.Pools)
			index[key] = i
			c.Pools = append(c.Pools, key)
		}
		c.Pools[i].Count += int(n)
	}
	if c.GPUs() == 0 {
		return Cluster{}, fmt.Errorf("traces: cluster file %s: no GPU nodes", name)
	}
	return c, nil
}
