package traces

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCluster(t *testing.T) {
	tests := map[string]struct {
		spec    string
		want    []NodePool
		wantErr string
	}{
		"one pool":      {spec: "32x8", want: []NodePool{{Count: 32, GPUs: 8}}},
		"pools, models": {spec: "32x8:V100, 16x4:P100", want: []NodePool{{32, 8, "V100"}, {16, 4, "P100"}}},
		"upper-case X":  {spec: "2X4", want: []NodePool{{2, 4, ""}}},
		"no x":          {spec: "32", wantErr: `traces: cluster spec "32": pool 1 "32": missing 'x'`},
		"zero nodes":    {spec: "0x8", wantErr: `pool 1 "0x8": node count "0" is not a positive integer`},
		"bad GPUs":      {spec: "4x8,4xq", wantErr: `pool 2 "4xq": GPUs per node "q" is not a positive integer`},
		"empty":         {spec: " ", wantErr: "traces: empty cluster spec"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := ParseCluster(tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmpDiff(tc.want, c.Pools); diff != "" {
				t.Errorf("pools (-want +got):\n%s", diff)
			}
			if again, err := ParseCluster(c.String()); err != nil || cmpDiff(c.Pools, again.Pools) != "" {
				t.Errorf("String %q does not read back: %v", c.String(), err)
			}
		})
	}
}

func TestParseClusterFile(t *testing.T) {
	tests := map[string]struct {
		content string
		want    []NodePool
		wantErr string
	}{
		"tiresias spec": {
			content: "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n2,16,4,128,254",
			want:    []NodePool{{32, 4, ""}},
		},
		"openb nodes grouped by GPUs and model": {
			content: "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,96000,786432,8,V100M32\nn2,64000,262144,2,P100\nn3,64000,262144,0,\n",
			want:    []NodePool{{2, 2, "P100"}, {1, 8, "V100M32"}},
		},
		"philly machine list": {
			content: "machineId, number of GPUs, single GPU mem\nm1, 8, 24GB\nm2, 4, 12GB\nm3, 8, 24GB\n",
			want:    []NodePool{{2, 8, "24GB"}, {1, 4, "12GB"}},
		},
		"bad GPU count": {
			content: "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,two,P100\n",
			wantErr: `nodes.csv:2: column "gpu": invalid integer "two"`,
		},
		"unknown header": {
			content: "a,b\n1,2\n",
			wantErr: `traces: cluster file nodes.csv: unknown header "a,b"`,
		},
		"no GPU node": {
			content: "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,0,\n",
			wantErr: `traces: cluster file nodes.csv: no GPU nodes`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := parseClusterFile(strings.NewReader(tc.content), "nodes.csv", "nodes.csv")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmpDiff(tc.want, c.Pools); diff != "" {
				t.Errorf("pools (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseClusterMissingFile: a spec that is not a pool list and looks like a path is a
// missing cluster file, and the error names the path; a spec with neither keeps the pool
// error.
func TestParseClusterMissingFile(t *testing.T) {
	dir := t.TempDir()
	tests := map[string]struct {
		spec    string
		wantErr string
	}{
		"csv name":      {spec: "clusters.csv", wantErr: "traces: cluster file clusters.csv: no such file"},
		"path":          {spec: filepath.Join(dir, "nodes"), wantErr: "traces: cluster file " + filepath.Join(dir, "nodes") + ": no such file"},
		"relative path": {spec: "conf/64x8", wantErr: "traces: cluster file conf/64x8: no such file"},
		"directory":     {spec: dir, wantErr: "traces: cluster file " + dir + ": a directory, not a file"},
		"pool typo":     {spec: "4x8,4xq", wantErr: `traces: cluster spec "4x8,4xq": pool 2 "4xq"`},
		"no extension":  {spec: "mycluster", wantErr: `traces: cluster spec "mycluster": pool 1 "mycluster": missing 'x'`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCluster(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseCluster(%q) error = %v, want it to contain %q", tc.spec, err, tc.wantErr)
			}
		})
	}
}
