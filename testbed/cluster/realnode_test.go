package cluster

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func realNodeTestOptions() Options {
	return Options{Name: "rn", Home: "/h", BinDir: "/b", RealNodes: 2}
}

// TestRealNodeConfigGolden pins every configuration file of a real node and kube-proxy's;
// run with -update to rewrite them.
func TestRealNodeConfigGolden(t *testing.T) {
	o := realNodeTestOptions()
	cfg := o.nodeConfigWith(o.realNode(1), 40001, 40002, "/usr/sbin/runc", "/usr/lib/cni")
	kp, err := kubeProxyConfig{Kubeconfig: "/h/clusters/rn/real-nodes/kube-proxy.kubeconfig", Node: "rn-node-0",
		PodCIDR: RealNodePodCIDR, HealthzPort: 40003, MetricsPort: 40004}.render()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]func() (string, error){
		"containerd.toml":      cfg.containerdConfig,
		"10-pickyman.conflist": cfg.cniConfig,
		"kubelet.yaml":         cfg.kubeletConfig,
		"kube-proxy.yaml":      func() (string, error) { return kp, nil },
		"kwokctl.yaml":         func() (string, error) { return o.realNodeKwokctlConfig(), nil },
		"kubelet.args": func() (string, error) {
			return strings.Join(cfg.kubeletArgs(), "\n") + "\n", nil
		},
	}
	for name, f := range files {
		t.Run(name, func(t *testing.T) {
			got, err := f()
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "realnode", name)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s (-golden +got):\n%s", name, diff)
			}
		})
	}
}

// TestRealNodeConfigsParse checks that the YAML and JSON files are well formed and say
// what the kubelet, kube-proxy and CNI need.
func TestRealNodeConfigsParse(t *testing.T) {
	o := realNodeTestOptions()
	cfg := o.nodeConfigWith(o.realNode(1), 40001, 40002, "/usr/sbin/runc", "/usr/lib/cni")
	kubelet, err := cfg.kubeletConfig()
	if err != nil {
		t.Fatal(err)
	}
	var k map[string]any
	if err := yaml.Unmarshal([]byte(kubelet), &k); err != nil {
		t.Fatalf("kubelet.yaml: %v\n%s", err, kubelet)
	}
	for key, want := range map[string]any{
		"kind": "KubeletConfiguration", "failCgroupV1": false, "cgroupDriver": "cgroupfs", "failSwapOn": false,
		"address": "10.244.1.1", "port": float64(40001), "cgroupRoot": cfg.CgroupRoot,
		"containerRuntimeEndpoint": "unix://" + cfg.Run + "/containerd.sock",
	} {
		if diff := cmp.Diff(want, k[key]); diff != "" {
			t.Errorf("kubelet.yaml %s (-want +got):\n%s", key, diff)
		}
	}
	cni, err := cfg.cniConfig()
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Plugins []struct {
			Type, Bridge string
			IPAM         struct {
				Ranges [][]struct{ Subnet, Gateway string }
			}
		}
	}
	if err := json.Unmarshal([]byte(cni), &c); err != nil {
		t.Fatalf("conflist: %v\n%s", err, cni)
	}
	if len(c.Plugins) != 1 || c.Plugins[0].Type != "bridge" || c.Plugins[0].Bridge != cfg.Bridge ||
		c.Plugins[0].IPAM.Ranges[0][0].Subnet != "10.244.1.0/24" || c.Plugins[0].IPAM.Ranges[0][0].Gateway != "10.244.1.1" {
		t.Errorf("conflist: %+v", c)
	}
	var kwok map[string]any
	if err := yaml.Unmarshal([]byte(o.realNodeKwokctlConfig()), &kwok); err != nil {
		t.Fatalf("kwokctl config: %v", err)
	}
	if kwok["kind"] != "KwokctlConfiguration" {
		t.Errorf("kwokctl config kind %v", kwok["kind"])
	}
}

func TestRealNodeNamesAndAddresses(t *testing.T) {
	o := realNodeTestOptions()
	if diff := cmp.Diff([]string{"rn-node-0", "rn-node-1"}, o.RealNodeNames()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	n := o.realNode(3)
	if n.Subnet.String() != "10.244.3.0/24" || n.IP.String() != "10.244.3.1" {
		t.Errorf("node 3: subnet %s ip %s", n.Subnet, n.IP)
	}
	if len(n.Bridge) > 15 || !strings.HasPrefix(n.Bridge, "pmrn") || !strings.HasSuffix(n.Bridge, "3") {
		t.Errorf("bridge %q", n.Bridge)
	}
	// The kubelet's sockets must fit in a unix socket address (107 bytes).
	if s := filepath.Join(n.Run, "kubelet", "plugins_registry", "some.csi.driver-reg.sock"); len(s) > 107 {
		t.Errorf("socket path too long: %s", s)
	}
	other := o
	other.Name = "other"
	if other.realNode(0).Bridge == o.realNode(0).Bridge || other.realNode(0).Run == o.realNode(0).Run {
		t.Error("two clusters share a bridge or runtime directory")
	}
	if realNodeAPIServerIP() != o.realNode(0).IP {
		t.Errorf("API server advertises %s, node 0 is %s", realNodeAPIServerIP(), o.realNode(0).IP)
	}
}

func TestCreateArgsWithRealNodesWriteTheKwokctlConfig(t *testing.T) {
	root, err := RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Name: "t", Home: t.TempDir(), BinDir: "/b", StagesDir: filepath.Join(root, "config", "kwok"), Timeout: time.Minute, RealNodes: 1}
	args, err := o.createArgs()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(args, " "), "--config "+o.realNodeKwokctlConfigPath()) {
		t.Errorf("args lack the real-node config: %v", args)
	}
	data, err := os.ReadFile(o.realNodeKwokctlConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"advertise-address", "enable-aggregator-routing", `"10.96.0.1"`, "kubelet-preferred-address-types"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("kwokctl config lacks %s:\n%s", want, data)
		}
	}
	o.RealNodes = 0
	args, err = o.createArgs()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(args, " "), "real-nodes") {
		t.Errorf("args without real nodes name their config: %v", args)
	}
}

func TestWriteImageArchive(t *testing.T) {
	img := Image{Ref: "pickyman.local/probe:v1", Entrypoint: []string{"/bin/probe", "check"},
		Files: []ImageFile{{Path: "bin/probe", Data: []byte("#!probe")}, {Path: "etc/x.conf", Mode: 0o644, Data: []byte("x")},
			{Path: "lib64", Link: "usr/lib64"}}}
	var a, b bytes.Buffer
	if err := WriteImageArchive(&a, img); err != nil {
		t.Fatal(err)
	}
	if err := WriteImageArchive(&b, img); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the same image gave different archives")
	}
	files := readTar(t, a.Bytes())
	for _, want := range []string{"oci-layout", "index.json", "blobs/", "blobs/sha256/"} {
		if _, ok := files[want]; !ok {
			t.Errorf("archive lacks %s", want)
		}
	}
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != img.Ref ||
		index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1" {
		t.Fatalf("index: %+v", index)
	}
	blob := func(digest string) []byte {
		data, ok := files["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
		if !ok {
			t.Fatalf("no blob %s", digest)
		}
		if blobDigest(data) != digest {
			t.Fatalf("blob %s has digest %s", digest, blobDigest(data))
		}
		return data
	}
	var manifest struct {
		Config struct{ Digest string }
		Layers []struct{ Digest, MediaType string }
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil {
		t.Fatal(err)
	}
	var config struct {
		Config struct{ Entrypoint []string }
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		}
	}
	if err := json.Unmarshal(blob(manifest.Config.Digest), &config); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(img.Entrypoint, config.Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	if len(manifest.Layers) != 1 || len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != manifest.Layers[0].Digest {
		t.Fatalf("layers %+v, diff ids %v", manifest.Layers, config.RootFS.DiffIDs)
	}
	layer := readTarHeaders(t, blob(manifest.Layers[0].Digest))
	want := map[string]int64{"bin/": 0o755, "bin/probe": 0o755, "etc/": 0o755, "etc/x.conf": 0o644, "lib64": 0o777}
	if diff := cmp.Diff(want, layer); diff != "" {
		t.Errorf("layer (-want +got):\n%s", diff)
	}
	tr := tar.NewReader(bytes.NewReader(blob(manifest.Layers[0].Digest)))
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatal("the layer has no lib64")
		}
		if h.Name == "lib64" {
			if h.Typeflag != tar.TypeSymlink || h.Linkname != "usr/lib64" || h.Size != 0 {
				t.Errorf("lib64: type %c, link %q, size %d; want a symbolic link to usr/lib64", h.Typeflag, h.Linkname, h.Size)
			}
			break
		}
	}
}

func readTar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = b
	}
}

func readTarHeaders(t *testing.T, data []byte) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h.Mode
	}
}

func TestSplitImageRef(t *testing.T) {
	for ref, want := range map[string][2]string{
		"pickyman.local/pause:testbed": {"pickyman.local/pause", "testbed"},
		"localhost:5000/a/b":           {"localhost:5000/a/b", "latest"},
		"localhost:5000/a/b:c":         {"localhost:5000/a/b", "c"},
		"busybox":                      {"busybox", "latest"},
	} {
		name, tag := splitImageRef(ref)
		if name != want[0] || tag != want[1] {
			t.Errorf("%s: %s %s, want %v", ref, name, tag, want)
		}
	}
}

func TestClientKubeconfigIsSignedByTheCA(t *testing.T) {
	certs, err := newWebhookCerts("ca.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientKubeconfig(certs.CACert, certs.CAKey, "https://127.0.0.1:1", "system:node:rn-node-0", []string{"system:nodes"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Clusters []struct {
			Cluster struct {
				Server string
				CA     string `json:"certificate-authority-data"`
			}
		}
		Users []struct {
			User struct {
				Cert string `json:"client-certificate-data"`
			}
		}
	}
	if err := yaml.Unmarshal(kc, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Clusters[0].Cluster.Server != "https://127.0.0.1:1" {
		t.Errorf("server %s", cfg.Clusters[0].Cluster.Server)
	}
	certPEM, err := base64.StdEncoding.DecodeString(cfg.Users[0].User.Cert)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caBlk, _ := pem.Decode(certs.CACert)
	ca, _ := x509.ParseCertificate(caBlk.Bytes)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not chain to the CA: %v", err)
	}
	if cert.Subject.CommonName != "system:node:rn-node-0" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject %v", cert.Subject)
	}
}

func TestUnescapeMountAndMountsUnder(t *testing.T) {
	if got := unescapeMount(`/run/a\040b/c`); got != "/run/a b/c" {
		t.Errorf("unescape: %q", got)
	}
	// Every process has / mounted; nothing is mounted below a fresh directory.
	if m := mountsUnder("/"); len(m) == 0 {
		t.Error("no mount under /")
	}
	if m := mountsUnder(t.TempDir()); len(m) != 0 {
		t.Errorf("mounts under a fresh directory: %v", m)
	}
}

func TestStopRealNodesWithoutRealNodesDoesNothing(t *testing.T) {
	o := Options{Name: "none", Home: t.TempDir()}
	if err := o.StopRealNodes(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestSplitSavedRule(t *testing.T) {
	got, err := splitSavedRule(`FORWARD -i pmrnab12cd+ ! -o pmrnab12cd+ -m comment --comment "pickyman-real-nodes:a \"b\" c" -j DROP`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"FORWARD", "-i", "pmrnab12cd+", "!", "-o", "pmrnab12cd+", "-m", "comment", "--comment", `pickyman-real-nodes:a "b" c`, "-j", "DROP"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := splitSavedRule(`FORWARD --comment "open`); err == nil {
		t.Error("an unterminated quote is not an error")
	}
}
