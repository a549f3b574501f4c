package cluster

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/pickyman/pickyman/testbed/cluster/stages"
)

// Real nodes: beside the kwok nodes, N nodes with a real kubelet (built from tools/k8s like the
// control plane), Debian's containerd 1.6 and runc, CNI (bridge + host-local from Debian's
// containernetworking-plugins) and one kube-proxy in iptables mode, all local processes as
// Kubernetes' hack/local-up-cluster.sh runs them. Nothing is pulled: images are OCI archives
// imported with `ctr -n k8s.io images import`, the sandbox image included (a static pause
// built from testbed/cluster/pause into bin/pause).
//
// Addresses (all private, all on this machine):
//   - node i gets the bridge realNodeBridge(i) with 10.244.i.1/24 (its InternalIP, the pods'
//     gateway) and its pods 10.244.i.2-254;
//   - the API server advertises 10.244.0.1 (node 0's bridge), so the `kubernetes` Service
//     (10.96.0.1, Service range 10.96.0.0/16) reaches it from pods through kube-proxy, and
//     calls webhooks at their Service's endpoint IPs (--enable-aggregator-routing);
//   - 10.96.0.0/16 is an unreachable route on the host and one FORWARD rule drops what pods
//     send anywhere but to another pod, so nothing a pod sends leaves the machine.
//
// The API server's flags for this are set when the cluster is created (createArgs): a
// cluster created without real nodes cannot get them later (Up says so).

const (
	// RealNodeLabel marks a real node (value "true"); it also carries type=real, so that
	// selectors of kwok nodes (type=kwok) never match it.
	RealNodeLabel = "pickyman.dev/real-node"
	// TypeReal is the value of LabelType on real nodes.
	TypeReal = "real"
	// RealNodeTaint keeps pods off a real node unless they tolerate it (NoSchedule).
	RealNodeTaint = "pickyman.dev/real-node"
	// PauseImage is the sandbox image of the real nodes, imported from bin/pause.
	PauseImage = "pickyman.local/pause:testbed"
	// RealNodePodCIDR holds every real node's pod subnet (10.244.<i>.0/24).
	RealNodePodCIDR = "10.244.0.0/16"
	// RealNodeServiceCIDR is the Service range of a cluster created with real nodes.
	RealNodeServiceCIDR = "10.96.0.0/16"
	// RealNodeKubernetesIP is the ClusterIP of the `kubernetes` Service.
	RealNodeKubernetesIP = "10.96.0.1"
	// ComponentKubeProxy is the one kube-proxy of the real nodes (they share the host's
	// network namespace, so one serves them all).
	ComponentKubeProxy = "kube-proxy"

	realNodeComment = "pickyman-real-nodes"
)

// RealNodeHostTools are the host's programs a real node needs (make realnode-deps installs
// them from Debian).
var RealNodeHostTools = []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "iptables-save", "ip6tables", "ip6tables-save", "ip"}

// realNodeCNIPlugins are the CNI plugins the node's network uses (containerd runs loopback
// itself).
var realNodeCNIPlugins = []string{"bridge", "host-local", "loopback"}

// cniBinDirs are where Debian (containernetworking-plugins) and upstream put CNI plugins.
var cniBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// realNode is one real node: its files in the workdir and its runtime directory. Unix sockets
// allow 107 bytes, so sockets, containerd's root and state and the kubelet's root live in a
// short directory under /run/pickyman-testbed (not under /run/pickyman, the agent's socket
// directory, which the agent's DaemonSet hands to its user).
type realNode struct {
	Index  int
	Name   string
	Dir    string // <workdir>/real-nodes/<name>: configurations, logs, pid files, pod logs
	Run    string // /run/pickyman-testbed/<hash>/<index>
	Bridge string
	Subnet netip.Prefix
	IP     netip.Addr // the bridge's address: the node's InternalIP and its pods' gateway
	// CgroupRoot is the node's cgroup (cgroupfs path) in every hierarchy; its pods are
	// under CgroupRoot/kubepods.
	CgroupRoot string
}

// realNodeID is a short stable id of the cluster's workdir, for host-wide names.
func (o Options) realNodeID() string {
	s := sha256.Sum256([]byte(o.Workdir()))
	return hex.EncodeToString(s[:])[:8]
}

func (o Options) realNodesDir() string { return filepath.Join(o.Workdir(), "real-nodes") }
func (o Options) realRunRoot() string  { return filepath.Join(realRunBase, o.realNodeID()) }

// realRunBase holds every cluster's runtime directories, one per cluster id.
const realRunBase = "/run/pickyman-testbed"

func (o Options) realNode(i int) realNode {
	n := hostRealNode(o.realNodeID(), i)
	n.Name = fmt.Sprintf("%s-node-%d", o.Name, i)
	n.Dir = filepath.Join(o.realNodesDir(), n.Name)
	return n
}

// hostRealNode is what of real node i of the cluster with id is named on the host alone (its
// runtime directory, bridge, subnet and cgroup), without the workdir that names the rest.
func hostRealNode(id string, i int) realNode {
	subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i), 0}), 24)
	return realNode{
		Index:      i,
		Run:        filepath.Join(realRunBase, id, strconv.Itoa(i)),
		Bridge:     realNodeBridge(id, i),
		Subnet:     subnet,
		IP:         subnet.Addr().Next(),
		CgroupRoot: "/pickyman-" + id + "-" + strconv.Itoa(i),
	}
}

// realNodeBridge is node i's bridge: "pmrn", 6 characters of the cluster id, the index (at
// most 15 characters, the kernel's limit, up to node 99999).
func realNodeBridge(id string, i int) string { return "pmrn" + id[:6] + strconv.Itoa(i) }

// realNodeAPIServerIP is the address the API server advertises: node 0's bridge.
func realNodeAPIServerIP() netip.Addr { return netip.AddrFrom4([4]byte{10, 244, 0, 1}) }

// RealNodeNames are the names of the cluster's real nodes: <cluster>-node-<i>.
func (o Options) RealNodeNames() []string {
	names := make([]string, o.RealNodes)
	for i := range names {
		names[i] = o.realNode(i).Name
	}
	return names
}

// startedRealNodes lists the real nodes whose directory exists in the workdir (what Down
// stops, whatever RealNodes says).
func (o Options) startedRealNodes() []realNode {
	entries, _ := os.ReadDir(o.realNodesDir())
	var out []realNode
	for i := 0; ; i++ {
		n := o.realNode(i)
		found := false
		for _, e := range entries {
			if e.IsDir() && e.Name() == n.Name {
				found = true
			}
		}
		if !found {
			break
		}
		out = append(out, n)
	}
	return out
}

// --- kwokctl: the API server's flags for real nodes ---------------------------------------

// realNodeKwokctlConfig is a KwokctlConfiguration for `kwokctl create cluster --config`: the
// API server's serving certificate also names the kubernetes Service's ClusterIP (pods
// verify it through in-cluster config) and node 0's address, and the API server advertises
// node 0's address, resolves webhook Services to their endpoints, reaches kubelets at their
// InternalIP with the admin certificate (logs, exec) and uses the Service range
// RealNodeServiceCIDR.
func (o Options) realNodeKwokctlConfig() string {
	pki := filepath.Join(o.Workdir(), "pki")
	args := [][2]string{
		{"advertise-address", realNodeAPIServerIP().String()},
		{"enable-aggregator-routing", "true"},
		{"service-cluster-ip-range", RealNodeServiceCIDR},
		{"kubelet-preferred-address-types", "InternalIP"},
		{"kubelet-client-certificate", filepath.Join(pki, "admin.crt")},
		{"kubelet-client-key", filepath.Join(pki, "admin.key")},
	}
	var b strings.Builder
	b.WriteString("# Written by pickyman's testbed (testbed/cluster/realnode.go) for clusters with real nodes.\n")
	b.WriteString("apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\n")
	fmt.Fprintf(&b, "options:\n  kubeApiserverCertSANs:\n  - %q\n  - %q\n", RealNodeKubernetesIP, realNodeAPIServerIP())
	b.WriteString("componentsPatches:\n- name: kube-apiserver\n  extraArgs:\n")
	for _, a := range args {
		fmt.Fprintf(&b, "  - key: %s\n    value: %q\n", a[0], a[1])
	}
	// kwokctl's binary runtime starts the kwok controller with --manage-all-nodes=true: it
	// would report the real nodes' status (and their pods') itself. Only the testbed's fake
	// nodes carry this annotation (nodes.go).
	b.WriteString("- name: kwok-controller\n  extraArgs:\n")
	b.WriteString("  - key: manage-all-nodes\n    value: \"false\"\n    override: true\n")
	fmt.Fprintf(&b, "  - key: manage-nodes-with-annotation-selector\n    value: %q\n", stages.FakeNodeAnnotation+"="+stages.FakeNodeValue)
	return b.String()
}

// realNodeKwokctlConfigPath is where createArgs writes realNodeKwokctlConfig.
func (o Options) realNodeKwokctlConfigPath() string {
	return filepath.Join(o.Home, "clusters", o.Name+".real-nodes.kwokctl.yaml")
}

// realNodeCreateArgs writes the KwokctlConfiguration and returns kwokctl's argument for it.
func (o Options) realNodeCreateArgs() ([]string, error) {
	p := o.realNodeKwokctlConfigPath()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p, []byte(o.realNodeKwokctlConfig()), 0o644); err != nil {
		return nil, err
	}
	return []string{"--config", p}, nil
}

// --- configuration files --------------------------------------------------------------------

type realNodeConfig struct {
	realNode
	Cluster      string
	Workdir      string
	CNIBinDir    string
	RuncPath     string
	KubeletPort  int
	HealthzPort  int
	PodCIDR      string
	ServiceCIDR  string
	APIServerIP  string
	KubernetesIP string
}

// nodeConfig is what node n's configuration files say; the host's runc and CNI plugin
// directory are looked up.
func (o Options) nodeConfig(n realNode, kubeletPort, healthzPort int) realNodeConfig {
	runc, _ := exec.LookPath("runc")
	if runc == "" {
		runc = "runc"
	}
	return o.nodeConfigWith(n, kubeletPort, healthzPort, runc, cniBinDir())
}

func (o Options) nodeConfigWith(n realNode, kubeletPort, healthzPort int, runc, cniDir string) realNodeConfig {
	return realNodeConfig{realNode: n, Cluster: o.Name, Workdir: o.Workdir(), CNIBinDir: cniDir,
		RuncPath: runc, KubeletPort: kubeletPort, HealthzPort: healthzPort, PodCIDR: RealNodePodCIDR,
		ServiceCIDR: RealNodeServiceCIDR, APIServerIP: realNodeAPIServerIP().String(), KubernetesIP: RealNodeKubernetesIP}
}

func cniBinDir() string {
	for _, d := range cniBinDirs {
		if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
			return d
		}
	}
	return cniBinDirs[0]
}

var realNodeTemplates = template.Must(template.New("").Funcs(template.FuncMap{"json": func(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}}).Parse(`
{{define "containerd"}}# containerd 1.6 of real node {{.Name}} (testbed/cluster/realnode.go)
version = 2
root = {{json (print .Run "/containerd/root")}}
state = {{json (print .Run "/containerd/state")}}
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = {{json (print .Run "/containerd.sock")}}

[ttrpc]
  address = ""

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = {{json (print .Run "/containerd/opt")}}
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = {{json .PauseImage}}
    # This machine refuses a negative oom_score_adj (no CAP_SYS_RESOURCE): without this runc
    # fails with "can't get final child's PID from pipe".
    restrict_oom_score_adj = true
    disable_apparmor = true
    enable_selinux = false
    netns_mounts_under_state_dir = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          BinaryName = {{json .RuncPath}}
          Root = {{json (print .Run "/runc")}}
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = {{json .CNIBinDir}}
      conf_dir = {{json (print .Dir "/cni")}}
      max_conf_num = 1
{{end}}
{{define "cni"}}{
  "cniVersion": "1.0.0",
  "name": {{json (print "pickyman-" .Name)}},
  "plugins": [
    {
      "type": "bridge",
      "bridge": {{json .Bridge}},
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": {{json (print .Run "/cni-ipam")}},
        "ranges": [[{"subnet": {{json .Subnet.String}}, "gateway": {{json .IP.String}}}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
{{end}}
{{define "kubelet"}}# kubelet of real node {{.Name}} (testbed/cluster/realnode.go)
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The host has cgroup v1 hierarchies (cgroup2 only at /sys/fs/cgroup/unified).
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: {{.CgroupRoot}}
failSwapOn: false
containerRuntimeEndpoint: unix://{{.Run}}/containerd.sock
address: {{.IP}}
port: {{.KubeletPort}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {{.HealthzPort}}
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: {{.Workdir}}/pki/ca.crt
authorization:
  mode: Webhook
registerNode: true
registerWithTaints:
- key: {{.Taint}}
  value: "true"
  effect: NoSchedule
# No DNS: a pod that looks a name up asks its own loopback, never the host's resolver.
resolvConf: {{.Dir}}/resolv.conf
clusterDomain: cluster.local
podLogsDir: {{.Dir}}/pod-logs
volumePluginDir: {{.Run}}/volume-plugins
makeIPTablesUtilChains: false
# Raising its own OOM score below 0 is refused here.
oomScoreAdj: 0
# Imported images cannot be pulled again: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
maxPods: 110
serializeImagePulls: false
{{end}}
{{define "kube-proxy"}}# kube-proxy of the real nodes (testbed/cluster/realnode.go)
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: {{.Kubeconfig}}
mode: iptables
hostnameOverride: {{.Node}}
clusterCIDR: {{.PodCIDR}}
nodePortAddresses:
- {{.PodCIDR}}
healthzBindAddress: 127.0.0.1:{{.HealthzPort}}
metricsBindAddress: 127.0.0.1:{{.MetricsPort}}
oomScoreAdj: 0
# Leave the host's conntrack sysctls alone.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  minSyncPeriod: 0s
  syncPeriod: 30s
{{end}}
`))

func render(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := realNodeTemplates.ExecuteTemplate(&b, name, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// PauseImage and Taint are fields for the templates.
func (realNodeConfig) PauseImage() string { return PauseImage }
func (realNodeConfig) Taint() string      { return RealNodeTaint }

func (c realNodeConfig) containerdConfig() (string, error) { return render("containerd", c) }
func (c realNodeConfig) cniConfig() (string, error)        { return render("cni", c) }
func (c realNodeConfig) kubeletConfig() (string, error)    { return render("kubelet", c) }

// kubeletArgs are the kubelet's flags; the rest is in its configuration file.
func (c realNodeConfig) kubeletArgs() []string {
	return []string{
		"--config", filepath.Join(c.Dir, "kubelet.yaml"),
		"--kubeconfig", filepath.Join(c.Dir, "kubelet.kubeconfig"),
		"--root-dir", filepath.Join(c.Run, "kubelet"),
		"--cert-dir", filepath.Join(c.Run, "kubelet", "pki"),
		"--hostname-override", c.Name,
		"--node-ip", c.IP.String(),
		"--node-labels", RealNodeLabel + "=true," + LabelType + "=" + TypeReal,
		"--v", "2",
	}
}

type kubeProxyConfig struct {
	Kubeconfig, Node, PodCIDR string
	HealthzPort, MetricsPort  int
}

func (c kubeProxyConfig) render() (string, error) { return render("kube-proxy", c) }

// --- certificates -----------------------------------------------------------------------------

// clientKubeconfig is a kubeconfig with a client certificate for user (groups as
// Organization) signed by the cluster's CA (kwokctl's pki/ca.crt and ca.key).
func clientKubeconfig(caCertPEM, caKeyPEM []byte, server, user string, groups []string, now time.Time) ([]byte, error) {
	caBlock, _ := pem.Decode(caCertPEM)
	keyBlock, _ := pem.Decode(caKeyPEM)
	if caBlock == nil || keyBlock == nil {
		return nil, errors.New("no PEM in the cluster's CA files")
	}
	ca, err := x509.ParseCertificate(caBlock.Bytes)
	if err != nil {
		return nil, err
	}
	caKey, err := parsePrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: testbed
  context:
    cluster: testbed
    user: %s
current-context: testbed
`, server, b64(caCertPEM), user, b64(pemBlock("CERTIFICATE", der)), b64(pemBlock("EC PRIVATE KEY", keyDER)), user), nil
}

func parsePrivateKey(der []byte) (any, error) {
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return x509.ParsePKCS8PrivateKey(der)
}

// --- images -----------------------------------------------------------------------------------

// ImageFile is one file of an image's only layer.
type ImageFile struct {
	Path string // inside the image, e.g. "pause" or "bin/app"
	Mode int64  // 0755 when 0
	Data []byte
	// Link, if set, makes the file a symbolic link to Link (Mode and Data unused).
	Link string
}

// Image is a one-layer linux/amd64 image.
type Image struct {
	Ref        string // e.g. pickyman.local/pause:testbed
	Files      []ImageFile
	Entrypoint []string
	Env        []string // PATH=/ when empty
}

// WriteImageArchive writes img as an OCI image layout tarball (oci-layout, index.json,
// blobs/sha256/...), which `ctr images import` reads; the index names the image with the
// io.containerd.image.name annotation. The layer is an uncompressed tar, every time stamp
// is 0, so the same image always gives the same bytes.
func WriteImageArchive(w io.Writer, img Image) error {
	layer, err := layerTar(img.Files)
	if err != nil {
		return err
	}
	env := img.Env
	if len(env) == 0 {
		env = []string{"PATH=/"}
	}
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      "1970-01-01T00:00:00Z",
		"config":       map[string]any{"Entrypoint": img.Entrypoint, "Env": env, "WorkingDir": "/"},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{blobDigest(layer)}},
	})
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor("application/vnd.oci.image.config.v1+json", config, nil),
		"layers":        []any{descriptor("application/vnd.oci.image.layer.v1.tar", layer, nil)},
	})
	if err != nil {
		return err
	}
	_, tag := splitImageRef(img.Ref)
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []any{descriptor("application/vnd.oci.image.manifest.v1+json", manifest, map[string]string{
			"io.containerd.image.name":          img.Ref,
			"org.opencontainers.image.ref.name": tag,
		})},
	})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
	}
	for _, e := range []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{blobPath(config), config},
		{blobPath(manifest), manifest},
		{blobPath(layer), layer},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// WriteImageArchiveFile writes img to path.
func WriteImageArchiveFile(path string, img Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteImageArchive(f, img); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func layerTar(files []ImageFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	sorted := append([]ImageFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	dirs := map[string]bool{}
	for _, f := range sorted {
		p := strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		var parents []string
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
				return nil, err
			}
		}
		if f.Link != "" {
			if err := tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeSymlink, Linkname: f.Link, Mode: 0o777, ModTime: time.Unix(0, 0)}); err != nil {
				return nil, err
			}
			continue
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: mode, Size: int64(len(f.Data)), ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func blobDigest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func blobPath(b []byte) string { return "blobs/sha256/" + strings.TrimPrefix(blobDigest(b), "sha256:") }

func descriptor(mediaType string, b []byte, annotations map[string]string) map[string]any {
	d := map[string]any{"mediaType": mediaType, "digest": blobDigest(b), "size": len(b)}
	if len(annotations) > 0 {
		d["annotations"] = annotations
	}
	return d
}

// splitImageRef splits name:tag; a registry port's colon is not a tag's.
func splitImageRef(ref string) (name, tag string) {
	for i := len(ref) - 1; i >= 0 && ref[i] != '/'; i-- {
		if ref[i] == ':' {
			return ref[:i], ref[i+1:]
		}
	}
	return ref, "latest"
}

// ImportImage imports an image archive (OCI layout or docker save) into the containerd of
// every started real node, in the namespace the kubelet uses (k8s.io).
func (o Options) ImportImage(ctx context.Context, archive string) error {
	nodes := o.startedRealNodes()
	if len(nodes) == 0 {
		return errors.New("no real node is started")
	}
	for _, n := range nodes {
		if err := n.importImage(ctx, archive); err != nil {
			return err
		}
	}
	return nil
}

func (n realNode) importImage(ctx context.Context, archive string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", n.socket(), "--namespace", "k8s.io",
		"images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("component containerd of %s: ctr images import %s: %w\n%s (log: %s)", n.Name, archive, err,
			strings.TrimSpace(string(out)), n.log("containerd"))
	}
	return nil
}

// --- processes --------------------------------------------------------------------------------

func (n realNode) socket() string              { return filepath.Join(n.Run, "containerd.sock") }
func (n realNode) log(component string) string { return filepath.Join(n.Dir, component+".log") }
func (n realNode) pid(component string) string { return filepath.Join(n.Dir, component+".pid") }

func (o Options) kubeProxyFile(ext string) string {
	return filepath.Join(o.realNodesDir(), ComponentKubeProxy+"."+ext)
}

// RealNodeLog is the log file of a real node's component ("containerd", "kubelet") or, with
// node "", kube-proxy's.
func (o Options) RealNodeLog(node, component string) string {
	if node == "" {
		return o.kubeProxyFile("log")
	}
	return filepath.Join(o.realNodesDir(), node, component+".log")
}

// RealNodePodLogs is the directory where node's kubelet keeps its pods' container logs.
func (o Options) RealNodePodLogs(node string) string {
	return filepath.Join(o.realNodesDir(), node, "pod-logs")
}

// realNodeProcessPids returns the pid of every real-node process the pid files record, by
// "<node>/<component>" (and "kube-proxy").
func (o Options) realNodeProcessPids() map[string]int {
	pids := map[string]int{}
	for _, n := range o.startedRealNodes() {
		for _, c := range []string{"kubelet", "containerd"} {
			if pid := readPid(n.pid(c)); pid > 0 {
				pids[n.Name+"/"+c] = pid
			}
		}
	}
	if pid := readPid(o.kubeProxyFile("pid")); pid > 0 {
		pids[ComponentKubeProxy] = pid
	}
	return pids
}

// MissingRealNodeDeps lists what real nodes need that this machine lacks: root, the host's
// tools and CNI plugins (make realnode-deps), kubelet, kube-proxy and pause in bin/ (make
// realnode-tools).
func (o Options) MissingRealNodeDeps() []string {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (containerd, iptables, bridges and mounts need it)")
	}
	for _, t := range RealNodeHostTools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t+" (make realnode-deps)")
		}
	}
	dir := cniBinDir()
	for _, p := range realNodeCNIPlugins {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			missing = append(missing, filepath.Join(dir, p)+" (make realnode-deps)")
		}
	}
	for _, b := range []string{"kubelet", "kube-proxy", "pause"} {
		if _, err := os.Stat(o.Binary(b)); err != nil {
			missing = append(missing, o.Binary(b)+" (make realnode-tools)")
		}
	}
	return missing
}

// StartRealNodes starts containerd and the kubelet of every real node and the kube-proxy,
// unless they run, imports the pause image and waits until every real node is Ready and
// kube-proxy is healthy. It is idempotent. An error names the component and its log.
func (o Options) StartRealNodes(ctx context.Context, c *Clients) error {
	if o.RealNodes <= 0 {
		return nil
	}
	if missing := o.MissingRealNodeDeps(); len(missing) > 0 {
		return fmt.Errorf("real nodes: missing %s", strings.Join(missing, ", "))
	}
	if o.RealNodes > 250 {
		return fmt.Errorf("real nodes: at most 250 (10.244.<i>.0/24 each), not %d", o.RealNodes)
	}
	if err := c.checkRealNodeAPIServer(ctx); err != nil {
		return fmt.Errorf("real nodes: %w; the API server's flags for real nodes are set only when the cluster is created: run `pickyman cluster --name %s down` first", err, o.Name)
	}
	if err := o.reclaimDeadRealNodes(); err != nil {
		return err
	}
	pause, err := o.writePauseArchive()
	if err != nil {
		return err
	}
	if err := enableForwarding(); err != nil {
		return err
	}
	for i := range o.RealNodes {
		if err := o.startRealNode(ctx, o.realNode(i), pause); err != nil {
			return err
		}
	}
	if err := o.ensureRealNodeGuard(); err != nil {
		return err
	}
	if err := o.startKubeProxy(ctx); err != nil {
		return err
	}
	return o.WaitRealNodesReady(ctx, c)
}

// WaitRealNodesReady waits until every real node reports Ready (its kubelet registered it and
// its runtime and CNI network are up); the error has each kubelet's log tail.
func (o Options) WaitRealNodesReady(ctx context.Context, c *Clients) error {
	if err := c.WaitNodesReady(ctx, o.RealNodeNames(), o.Timeout); err != nil {
		var b strings.Builder
		for i := range o.RealNodes {
			n := o.realNode(i)
			fmt.Fprintf(&b, "component kubelet of %s: log %s\n%s\n", n.Name, n.log("kubelet"), tail(readFile(n.log("kubelet")), 10))
		}
		return fmt.Errorf("real nodes not Ready: %w\n%s", err, b.String())
	}
	return nil
}

// checkRealNodeAPIServer verifies that the API server advertises node 0's address (the
// cluster was created with real nodes): the kubernetes Service's endpoint.
func (c *Clients) checkRealNodeAPIServer(ctx context.Context) error {
	var addrs []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		slices, err := c.Kube.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx,
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
		if err != nil {
			return false, nil
		}
		addrs = addrs[:0]
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				addrs = append(addrs, e.Addresses...)
			}
		}
		return len(addrs) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("the kubernetes Service has no endpoints: %w", err)
	}
	if len(addrs) != 1 || addrs[0] != realNodeAPIServerIP().String() {
		return fmt.Errorf("the API server advertises %v, not %s", addrs, realNodeAPIServerIP())
	}
	return nil
}

// writePauseArchive writes the pause image archive from bin/pause into the workdir.
func (o Options) writePauseArchive() (string, error) {
	data, err := os.ReadFile(o.Binary("pause"))
	if err != nil {
		return "", fmt.Errorf("real nodes: %w (make realnode-tools)", err)
	}
	if err := os.MkdirAll(o.realNodesDir(), 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(o.realNodesDir(), "pause.tar")
	img := Image{Ref: PauseImage, Files: []ImageFile{{Path: "pause", Data: data}}, Entrypoint: []string{"/pause"}}
	return p, WriteImageArchiveFile(p, img)
}

func enableForwarding() error {
	for _, f := range []string{"/proc/sys/net/ipv4/ip_forward"} {
		if err := os.WriteFile(f, []byte("1\n"), 0o644); err != nil {
			return fmt.Errorf("real nodes: %s: %w", f, err)
		}
	}
	// Bridged pod-to-pod replies must see kube-proxy's NAT; the module is loaded on Debian's
	// kernels that run containerd.
	if _, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables"); err == nil {
		_ = os.WriteFile("/proc/sys/net/bridge/bridge-nf-call-iptables", []byte("1\n"), 0o644)
	}
	return nil
}

func (o Options) startRealNode(ctx context.Context, n realNode, pauseArchive string) error {
	for _, d := range []string{n.Dir, filepath.Join(n.Dir, "cni"), filepath.Join(n.Dir, "pod-logs"), n.Run} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := o.ensureBridge(n); err != nil {
		return fmt.Errorf("real node %s: bridge %s: %w", n.Name, n.Bridge, err)
	}
	if err := ensureCgroup(n.CgroupRoot); err != nil {
		return fmt.Errorf("real node %s: cgroup %s: %w", n.Name, n.CgroupRoot, err)
	}
	// containerd
	if !alive(readPid(n.pid("containerd"))) {
		cfg := o.nodeConfig(n, 0, 0)
		files := map[string]func() (string, error){
			"containerd.toml":          cfg.containerdConfig,
			"cni/10-pickyman.conflist": cfg.cniConfig,
		}
		for name, f := range files {
			s, err := f()
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(n.Dir, name), []byte(s), 0o644); err != nil {
				return err
			}
		}
		_ = os.Remove(n.socket())
		pid, err := startDetached("containerd", []string{"--config", filepath.Join(n.Dir, "containerd.toml")}, nil,
			n.log("containerd"), n.pid("containerd"))
		if err != nil {
			return fmt.Errorf("component containerd of %s failed to start: %w (log: %s)", n.Name, err, n.log("containerd"))
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
			if !alive(pid) {
				return false, errNotRunning
			}
			return exec.CommandContext(ctx, "ctr", "--address", n.socket(), "version").Run() == nil, nil
		})
		if err != nil {
			return fmt.Errorf("component containerd of %s not ready (%v); log: %s\n%s", n.Name, err, n.log("containerd"),
				tail(readFile(n.log("containerd")), 15))
		}
	}
	if err := n.importImage(ctx, pauseArchive); err != nil {
		return err
	}
	// kubelet
	if alive(readPid(n.pid("kubelet"))) {
		return nil
	}
	if err := o.writeNodeCredentials(n); err != nil {
		return fmt.Errorf("real node %s: %w", n.Name, err)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	healthz, err := freePort()
	if err != nil {
		return err
	}
	cfg := o.nodeConfig(n, port, healthz)
	kc, err := cfg.kubeletConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.Dir, "kubelet.yaml"), []byte(kc), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.Dir, "resolv.conf"), []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		return err
	}
	pid, err := startDetached(o.Binary("kubelet"), cfg.kubeletArgs(), nil, n.log("kubelet"), n.pid("kubelet"))
	if err != nil {
		return fmt.Errorf("component kubelet of %s failed to start: %w (log: %s)", n.Name, err, n.log("kubelet"))
	}
	return o.waitHealthy(ctx, "kubelet of "+n.Name, pid, fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz), n.log("kubelet"))
}

// waitHealthy waits until the process pid answers url with 200, and fails at once when it
// exits; the error names the component and the tail of its log.
func (o Options) waitHealthy(ctx context.Context, component string, pid int, url, log string) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(context.Context) (bool, error) {
		if !alive(pid) {
			return false, errNotRunning
		}
		return httpOK(url), nil
	})
	if err != nil {
		return fmt.Errorf("component %s not healthy (%w); log: %s\n%s", component, err, log, tail(readFile(log), 15))
	}
	return nil
}

// writeNodeCredentials writes the kubelet's kubeconfig: a client certificate for
// system:node:<name> in system:nodes (the Node authorizer's and NodeRestriction's subject).
func (o Options) writeNodeCredentials(n realNode) error {
	return o.writeClientKubeconfig(filepath.Join(n.Dir, "kubelet.kubeconfig"), "system:node:"+n.Name, []string{"system:nodes"})
}

func (o Options) writeClientKubeconfig(path, user string, groups []string) error {
	pki := filepath.Join(o.Workdir(), "pki")
	caCert, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return err
	}
	caKey, err := os.ReadFile(filepath.Join(pki, "ca.key"))
	if err != nil {
		return err
	}
	server, err := o.apiServerURL()
	if err != nil {
		return err
	}
	kc, err := clientKubeconfig(caCert, caKey, server, user, groups, time.Now())
	if err != nil {
		return err
	}
	return os.WriteFile(path, kc, 0o600)
}

// apiServerURL is the server of the admin kubeconfig (https://127.0.0.1:<port>).
func (o Options) apiServerURL() (string, error) {
	data, err := os.ReadFile(o.Kubeconfig())
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "server:"); ok {
			return strings.TrimSpace(s), nil
		}
	}
	return "", fmt.Errorf("no server in %s", o.Kubeconfig())
}

func (o Options) startKubeProxy(ctx context.Context) error {
	if alive(readPid(o.kubeProxyFile("pid"))) {
		return nil
	}
	if err := o.writeClientKubeconfig(o.kubeProxyFile("kubeconfig"), "system:kube-proxy", nil); err != nil {
		return fmt.Errorf("component %s: %w", ComponentKubeProxy, err)
	}
	healthz, err := freePort()
	if err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	cfg, err := kubeProxyConfig{Kubeconfig: o.kubeProxyFile("kubeconfig"), Node: o.realNode(0).Name, PodCIDR: RealNodePodCIDR,
		HealthzPort: healthz, MetricsPort: metrics}.render()
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.kubeProxyFile("yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	pid, err := startDetached(o.Binary("kube-proxy"), []string{"--config", o.kubeProxyFile("yaml"), "--v", "2"}, nil,
		o.kubeProxyFile("log"), o.kubeProxyFile("pid"))
	if err != nil {
		return fmt.Errorf("component %s failed to start: %w (log: %s)", ComponentKubeProxy, err, o.kubeProxyFile("log"))
	}
	return o.waitHealthy(ctx, ComponentKubeProxy, pid, fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz), o.kubeProxyFile("log"))
}

// --- host networking ----------------------------------------------------------------------------

func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// netAddrSet is the kernel's NET_ADDR_SET in /sys/class/net/<dev>/addr_assign_type: the
// address was set by the user, and a bridge keeps it whatever its ports.
const netAddrSet = "3"

// ensureBridge creates node n's bridge with its address unless it exists, after checking that
// no other interface holds an address in RealNodePodCIDR.
func (o Options) ensureBridge(n realNode) error {
	out, err := run("ip", "-o", "-4", "addr", "show")
	if err != nil {
		return err
	}
	pods := netip.MustParsePrefix(RealNodePodCIDR)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[2] != "inet" {
			continue
		}
		p, err := netip.ParsePrefix(f[3])
		if err != nil || !pods.Overlaps(p) {
			continue
		}
		if dev := strings.TrimSuffix(f[1], ":"); !strings.HasPrefix(dev, "pmrn"+o.realNodeID()[:6]) {
			return fmt.Errorf("%s holds %s, inside the real nodes' %s (another cluster's real nodes?)", dev, p, RealNodePodCIDR)
		}
	}
	if _, err := run("ip", "link", "show", "dev", n.Bridge); err != nil {
		if _, err := run("ip", "link", "add", n.Bridge, "type", "bridge"); err != nil {
			return err
		}
	}
	// The bridge's own address, set once: a bridge whose address was never set takes the
	// lowest of its ports', so a pod's end would change the gateway's address under the
	// node's other pods, and their traffic through it would stall until they resolved it
	// again (about 27 s seen).
	if t, err := os.ReadFile(filepath.Join("/sys/class/net", n.Bridge, "addr_assign_type")); err != nil {
		return err
	} else if strings.TrimSpace(string(t)) != netAddrSet {
		mac, err := os.ReadFile(filepath.Join("/sys/class/net", n.Bridge, "address"))
		if err != nil {
			return err
		}
		if _, err := run("ip", "link", "set", "dev", n.Bridge, "address", strings.TrimSpace(string(mac))); err != nil {
			return err
		}
	}
	addr := netip.PrefixFrom(n.IP, n.Subnet.Bits()).String()
	if out, _ := run("ip", "-o", "-4", "addr", "show", "dev", n.Bridge); !strings.Contains(out, " "+addr+" ") {
		if _, err := run("ip", "addr", "add", addr, "dev", n.Bridge); err != nil {
			return err
		}
	}
	if _, err := run("ip", "link", "set", n.Bridge, "alias", realNodeComment+":"+o.Name); err != nil {
		return err
	}
	_, err = run("ip", "link", "set", n.Bridge, "up")
	return err
}

// guardRule keeps pods' traffic on this machine: what comes from a real node's bridge may go
// only to another real node's bridge (or to the host itself, which is INPUT, not FORWARD).
func (o Options) guardRule() []string {
	prefix := "pmrn" + o.realNodeID()[:6] + "+"
	return []string{"FORWARD", "-i", prefix, "!", "-o", prefix, "-m", "comment", "--comment", realNodeComment + ":" + o.Name, "-j", "DROP"}
}

// ensureRealNodeGuard adds the FORWARD guard and an unreachable route for the Service range
// (a ClusterIP that kube-proxy has not programmed yet fails instead of leaving the machine
// by the default route).
func (o Options) ensureRealNodeGuard() error {
	rule := o.guardRule()
	if _, err := run("iptables", append([]string{"-w", "-C"}, rule...)...); err != nil {
		if _, err := run("iptables", append([]string{"-w", "-I"}, rule...)...); err != nil {
			return err
		}
	}
	if out, _ := run("ip", "route", "show", "type", "unreachable", RealNodeServiceCIDR); !strings.Contains(out, RealNodeServiceCIDR) {
		if _, err := run("ip", "route", "add", "unreachable", RealNodeServiceCIDR); err != nil {
			return err
		}
	}
	return nil
}

// --- cgroups and mounts -----------------------------------------------------------------------

// cgroupMounts are the mount points of the cgroup hierarchies (v1 and v2).
func cgroupMounts() []string {
	var out []string
	for _, m := range mountInfo() {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			out = append(out, m.point)
		}
	}
	return out
}

// ensureCgroup creates the cgroup in every hierarchy (the kubelet requires its cgroupRoot in
// each), with cpuset's cpus and mems copied from the root.
func ensureCgroup(cg string) error {
	for _, m := range cgroupMounts() {
		dir := filepath.Join(m, cg)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			cur, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil || strings.TrimSpace(string(cur)) != "" {
				continue
			}
			parent, err := os.ReadFile(filepath.Join(m, f))
			if err == nil {
				_ = os.WriteFile(filepath.Join(dir, f), parent, 0o644)
			}
		}
	}
	return nil
}

// cgroupProcs lists the processes in cg and below, in every hierarchy.
func cgroupProcs(cg string) []int {
	seen := map[int]bool{}
	var out []int
	for _, m := range cgroupMounts() {
		_ = filepath.WalkDir(filepath.Join(m, cg), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
					seen[pid] = true
					out = append(out, pid)
				}
			}
			return nil
		})
	}
	return out
}

// removeCgroup removes cg and every cgroup below it, deepest first, in every hierarchy.
func removeCgroup(cg string) []string {
	var left []string
	for _, m := range cgroupMounts() {
		root := filepath.Join(m, cg)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			var err error
			for range 50 {
				if err = syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				left = append(left, fmt.Sprintf("cgroup %s (%v)", dirs[i], err))
			}
		}
	}
	return left
}

type mount struct{ point, fstype string }

// mountInfo parses /proc/self/mountinfo.
func mountInfo() []mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source super
		fields := strings.Fields(sc.Text())
		if len(fields) < 7 {
			continue
		}
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) {
			continue
		}
		out = append(out, mount{point: unescapeMount(fields[4]), fstype: fields[sep+1]})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountsUnder lists the mount points at or below any of dirs, deepest first.
func mountsUnder(dirs ...string) []string {
	var out []string
	for _, m := range mountInfo() {
		for _, d := range dirs {
			if d == "" {
				continue
			}
			if m.point == d || strings.HasPrefix(m.point, d+"/") {
				out = append(out, m.point)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// --- stop -----------------------------------------------------------------------------------------

// StopRealNodes stops the real nodes and leaves nothing of them on the machine: with the API
// server up, it first deletes the nodes' pods and lets the kubelets tear them down (CNI
// DEL); then it stops kube-proxy (and removes its rules with `kube-proxy --cleanup`), the
// kubelets and containerd, kills what is left in the nodes' cgroups and every shim of their
// containerd, unmounts what is mounted below their directories (netns, rootfs, volumes),
// deletes the bridges, the guard rule and route, the cgroups and the runtime directories,
// and the Node objects. It fails, naming each, if a process, mount, network namespace,
// bridge or iptables rule of the real nodes is left.
func (o Options) StopRealNodes(ctx context.Context) error {
	defer os.Remove(o.realNodeKwokctlConfigPath())
	nodes := o.startedRealNodes()
	if _, err := os.Stat(o.realNodesDir()); os.IsNotExist(err) {
		return nil
	}
	var c *Clients
	if cc, err := NewClients(o.Kubeconfig()); err == nil {
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if cc.WaitReady(wctx, 2*time.Second) == nil {
			c = cc
		}
		cancel()
	}
	if c != nil {
		o.drainRealNodes(ctx, c, nodes)
	}
	pids := o.realNodeProcessPids()
	if pid := pids[ComponentKubeProxy]; pid > 0 {
		_ = stopPid(pid, 10*time.Second)
	}
	if _, err := os.Stat(o.Binary("kube-proxy")); err == nil {
		// Removes the KUBE-* chains and rules of kube-proxy's modes, but not KUBE-FIREWALL,
		// which it shares with the kubelet.
		_, _ = run(o.Binary("kube-proxy"), "--cleanup")
	}
	for _, ipt := range []string{"iptables", "ip6tables"} {
		removeChain(ipt, "filter", "KUBE-FIREWALL", "INPUT", "OUTPUT")
	}
	var left []string
	for _, n := range nodes {
		left = append(left, o.stopRealNode(n, pids)...)
	}
	rule := o.guardRule()
	for range 10 {
		if _, err := run("iptables", append([]string{"-w", "-D"}, rule...)...); err != nil {
			break
		}
	}
	o.healPartitions()
	if out, _ := run("ip", "route", "show", "type", "unreachable", RealNodeServiceCIDR); strings.Contains(out, RealNodeServiceCIDR) {
		_, _ = run("ip", "route", "del", "unreachable", RealNodeServiceCIDR)
	}
	if c != nil {
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = n.Name
		}
		_ = c.DeleteNodes(ctx, names)
	}
	// Verify.
	for name, pid := range pids {
		if alive(pid) {
			left = append(left, fmt.Sprintf("process %s (pid %d)", name, pid))
		}
	}
	left = append(left, o.realNodeLeftovers(nodes)...)
	if len(left) == 0 {
		// The kubelet's device-plugin socket has a fixed path; a host kubelet (with /var/lib/kubelet
		// as its root, so more than this directory in it) keeps its own.
		if entries, _ := os.ReadDir("/var/lib/kubelet"); len(entries) == 1 && entries[0].Name() == "device-plugins" {
			_ = os.Remove("/var/lib/kubelet/device-plugins/kubelet.sock")
		}
		// Directories the kubelet and containerd make outside ours, removed when empty.
		for _, d := range []string{"/var/lib/kubelet/device-plugins", "/var/lib/kubelet", "/var/lib/cni/results", "/var/lib/cni", "/run/containerd/s", "/run/containerd"} {
			_ = syscall.Rmdir(d)
		}
		_ = os.RemoveAll(o.realRunRoot())
		_ = os.Remove(filepath.Dir(o.realRunRoot())) // /run/pickyman-testbed, when empty
		_ = os.RemoveAll(o.realNodesDir())
		return nil
	}
	sort.Strings(left)
	return fmt.Errorf("real nodes: left after stop: %s", strings.Join(left, "; "))
}

// drainRealNodes deletes the pods bound to the real nodes and waits (up to 30 s) until the
// kubelets have torn them down, so that CNI releases their addresses and namespaces.
func (o Options) drainRealNodes(ctx context.Context, c *Clients, nodes []realNode) {
	grace := int64(1)
	for _, n := range nodes {
		if !alive(readPid(n.pid("kubelet"))) {
			continue
		}
		pods, err := c.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			err := c.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
			if err != nil && !apierrors.IsNotFound(err) {
				o.logf("real node %s: delete pod %s/%s: %v", n.Name, p.Namespace, p.Name, err)
			}
		}
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			pods, err := c.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
			if err != nil {
				return false, nil
			}
			// The pods are gone from the API once their containers are; the sandboxes (and
			// their network) are stopped right after.
			return len(pods.Items) == 0 && len(mountsUnder(filepath.Join(n.Run, "containerd", "state", "io.containerd.grpc.v1.cri", "netns"))) == 0, nil
		})
	}
}

func (o Options) stopRealNode(n realNode, pids map[string]int) []string {
	var left []string
	if pid := pids[n.Name+"/kubelet"]; pid > 0 {
		if err := stopPid(pid, 10*time.Second); err != nil {
			left = append(left, fmt.Sprintf("kubelet of %s: %v", n.Name, err))
		}
	}
	if pid := pids[n.Name+"/containerd"]; pid > 0 {
		if err := stopPid(pid, 10*time.Second); err != nil {
			left = append(left, fmt.Sprintf("containerd of %s: %v", n.Name, err))
		}
	}
	return append(left, clearRealNode(n)...)
}

// clearRealNode removes what of node n is on the host once its kubelet and containerd are
// stopped: the containers' processes and shims, the mounts, the cgroup, the bridge with its
// ports, libcni's cache of its sandboxes and the runtime directory. n.Dir and n.Name may be
// empty (a dead cluster's node, known by its host names alone).
func clearRealNode(n realNode) []string {
	var left []string
	if n.Run == "" || n.CgroupRoot == "" {
		// Known by its bridge alone: only the bridge and its ports are its own.
		return clearRealNodeBridge(n)
	}
	// The containers' processes, then their shims.
	for range 20 {
		procs := append(cgroupProcs(n.CgroupRoot), shimPids(n.socket())...)
		if len(procs) == 0 {
			break
		}
		for _, pid := range procs {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range mountsUnder(n.Run, n.Dir) {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			left = append(left, fmt.Sprintf("mount %s (%v)", p, err))
		}
	}
	left = append(left, removeCgroup(n.CgroupRoot)...)
	left = append(left, clearRealNodeBridge(n)...)
	// libcni's cache of the sandboxes' results (left when CNI did not tear a sandbox down):
	// <network>-<sandbox id>-<interface>, for our network and containerd's loopback.
	var cached []string
	if n.Name != "" {
		cached, _ = filepath.Glob(filepath.Join("/var/lib/cni/results", "pickyman-"+n.Name+"-*"))
	}
	for _, dir := range []string{"root", "state"} {
		ids, _ := os.ReadDir(filepath.Join(n.Run, "containerd", dir, "io.containerd.grpc.v1.cri", "sandboxes"))
		for _, id := range ids {
			cached = append(cached, filepath.Join("/var/lib/cni/results", "cni-loopback-"+id.Name()+"-lo"))
		}
	}
	for _, f := range cached {
		_ = os.Remove(f)
	}
	if err := os.RemoveAll(n.Run); err != nil {
		left = append(left, fmt.Sprintf("runtime directory %s (%v)", n.Run, err))
	}
	return left
}

// clearRealNodeBridge deletes node n's bridge with its ports.
func clearRealNodeBridge(n realNode) []string {
	var left []string
	if out, err := run("ip", "-o", "link", "show", "master", n.Bridge); err == nil {
		// veths whose pod namespace is gone go with it; remove any other port.
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 1 {
				dev, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
				_, _ = run("ip", "link", "del", dev)
			}
		}
	}
	if _, err := run("ip", "link", "show", "dev", n.Bridge); err == nil {
		if _, err := run("ip", "link", "del", n.Bridge); err != nil {
			left = append(left, err.Error())
		}
	}
	return left
}

// removeChain deletes the jumps from the parent chains to chain, then chain itself.
func removeChain(ipt, table, chain string, parents ...string) {
	for _, p := range parents {
		for range 10 {
			if _, err := run(ipt, "-w", "-t", table, "-D", p, "-j", chain); err != nil {
				break
			}
		}
	}
	if _, err := run(ipt, "-w", "-t", table, "-F", chain); err == nil {
		_, _ = run(ipt, "-w", "-t", table, "-X", chain)
	}
}

// shimPids lists the containerd-shim processes of the containerd at socket.
func shimPids(socket string) []int {
	var out []int
	eachProcess(func(pid int, cmdline string) {
		argv0, _, _ := strings.Cut(cmdline, "\x00")
		if strings.Contains(filepath.Base(argv0), "containerd-shim") && strings.Contains(cmdline, socket) && alive(pid) {
			out = append(out, pid)
		}
	})
	return out
}

// eachProcess calls fn with the pid and the NUL-separated command line of every process in
// /proc that can be read.
func eachProcess(fn func(pid int, cmdline string)) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		fn(pid, string(cmd))
	}
}

// realNodeLeftovers lists what of the real nodes is still on the machine: processes, mounts
// (network namespaces included), bridges, cgroups, the guard rule and route, and iptables
// rules of kube-proxy or CNI.
func (o Options) realNodeLeftovers(nodes []realNode) []string {
	var left []string
	for _, n := range nodes {
		for _, pid := range append(cgroupProcs(n.CgroupRoot), shimPids(n.socket())...) {
			left = append(left, fmt.Sprintf("process %d of %s", pid, n.Name))
		}
		for _, m := range mountsUnder(n.Run, n.Dir) {
			left = append(left, "mount "+m)
		}
		if _, err := run("ip", "link", "show", "dev", n.Bridge); err == nil {
			left = append(left, "bridge "+n.Bridge)
		}
		for _, m := range cgroupMounts() {
			if _, err := os.Stat(filepath.Join(m, n.CgroupRoot)); err == nil {
				left = append(left, "cgroup "+filepath.Join(m, n.CgroupRoot))
			}
		}
	}
	if out, _ := run("ip", "route", "show", "type", "unreachable", RealNodeServiceCIDR); strings.Contains(out, RealNodeServiceCIDR) {
		left = append(left, "route unreachable "+RealNodeServiceCIDR)
	}
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, err := run(save)
		if err != nil {
			continue
		}
		// This cluster's guard rule names its bridges' prefix; another cluster of the same
		// name (another workdir) has its own.
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "KUBE-") || strings.Contains(line, "CNI-") || strings.Contains(line, "pmrn"+o.realNodeID()[:6]) {
				left = append(left, strings.TrimSuffix(save, "-save")+" "+strings.TrimSpace(line))
			}
		}
	}
	return left
}
