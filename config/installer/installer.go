// Package installer renders PickyMan's installer: a kustomization of config/ (config/default,
// or an overlay of it) with the operator's and the agent's images set, as one YAML stream.
// `make build-installer` writes it to dist/install.yaml, and the testbed installs PickyMan
// from the same rendering, so that what the tests run is what a user applies.
package installer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The image names that config/ uses; Render replaces them.
const (
	OperatorImage = "ghcr.io/pickyman/pickyman-operator"
	AgentImage    = "ghcr.io/pickyman/pickyman-agent"
	// TestbedAgentImage is the testbed's agent, which config/overlays/testbed runs.
	TestbedAgentImage = "ghcr.io/pickyman/pickyman-testbed-agent"
)

// Options say what to render.
type Options struct {
	// Kustomization is the directory to render: config/default or an overlay of it.
	Kustomization string
	// Operator and Agent are the images (name:tag or name@digest); empty keeps config/'s.
	Operator, Agent string
	// TestbedAgent is the testbed agent's image, for config/overlays/testbed.
	TestbedAgent string
}

// Objects renders the kustomization with the images set and returns its objects in order.
func Objects(o Options) ([]*unstructured.Unstructured, error) {
	res, err := build(o)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, r := range res.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		out = append(out, u)
	}
	return out, nil
}

// build renders the kustomization with the images set.
func build(o Options) (resmap.ResMap, error) {
	dir, err := filepath.Abs(o.Kustomization)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err != nil {
		return nil, fmt.Errorf("kustomization %s: %w", o.Kustomization, err)
	}
	// An in-memory kustomization over the directory on disk: it adds the images and
	// nothing else, and leaves the tree untouched.
	fs := filesys.MakeFsOnDisk()
	tmp, err := os.MkdirTemp("", "pickyman-installer-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// kustomize takes a base only by a relative path.
	rel, err := filepath.Rel(tmp, dir)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "resources:\n- %s\n", rel)
	var images []string
	for _, img := range []struct{ name, ref string }{{OperatorImage, o.Operator}, {AgentImage, o.Agent}, {TestbedAgentImage, o.TestbedAgent}} {
		if img.ref == "" {
			continue
		}
		entry, err := imageEntry(img.name, img.ref)
		if err != nil {
			return nil, err
		}
		images = append(images, entry)
	}
	if len(images) > 0 {
		b.WriteString("images:\n" + strings.Join(images, ""))
	}
	if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(b.String()), 0o600); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone // the directory lies outside the temporary root
	res, err := krusty.MakeKustomizer(opts).Run(fs, tmp)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", o.Kustomization, err)
	}
	return res, nil
}

// Render renders the kustomization with the images set as one YAML stream, the form of
// dist/install.yaml.
func Render(o Options) ([]byte, error) {
	res, err := build(o)
	if err != nil {
		return nil, err
	}
	return res.AsYaml()
}

// imageEntry is a kustomize images entry that replaces name with ref (name:tag or
// name@sha256:...).
func imageEntry(name, ref string) (string, error) {
	if i := strings.Index(ref, "@"); i > 0 {
		return fmt.Sprintf("- name: %q\n  newName: %q\n  digest: %q\n", name, ref[:i], ref[i+1:]), nil
	}
	// The tag is after the last colon that follows the last slash (a registry may have a port).
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon <= slash {
		return "", fmt.Errorf("image %q: no tag or digest", ref)
	}
	// Quoted: YAML would read a tag such as 5896011 (a commit hash of digits) as a number.
	return fmt.Sprintf("- name: %q\n  newName: %q\n  newTag: %q\n", name, ref[:colon], ref[colon+1:]), nil
}
