package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Kustomize builds the kustomization in dir, as `kustomize build dir` does, and returns its
// objects in order.
func Kustomize(dir string) ([]*unstructured.Unstructured, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resmap, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range resmap.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

// testbedManifests builds what the testbed applies for PickyMan's components: config/testbed
// (CRDs, the operator's RBAC, the webhook configurations, the agent's RBAC and the testbed
// agent's extra role) without the agent's DaemonSet. The webhooks are pointed at the
// operator's local address: a Service here has no endpoints the API server could reach.
func testbedManifests(configDir, webhookAddr string) ([]*unstructured.Unstructured, error) {
	built, err := Kustomize(filepath.Join(configDir, "testbed"))
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, o := range built {
		if o.GetKind() == "DaemonSet" || o.GetKind() == "Deployment" {
			continue
		}
		objs = append(objs, o)
	}
	for _, o := range objs {
		if o.GetKind() != "MutatingWebhookConfiguration" && o.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for i, h := range hooks {
			m := h.(map[string]any)
			path, _, _ := unstructured.NestedString(m, "clientConfig", "service", "path")
			if path == "" {
				return nil, fmt.Errorf("%s %s: webhook %v has no service path", o.GetKind(), o.GetName(), m["name"])
			}
			m["clientConfig"] = map[string]any{"url": "https://" + webhookAddr + path}
			hooks[i] = m
		}
		if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// Apply server-side applies objects in order (CustomResourceDefinitions first, each waited
// for until Established) and creates the namespaces they name.
func (c *Clients) Apply(ctx context.Context, objs []*unstructured.Unstructured, timeout time.Duration) error {
	var crds, rest []*unstructured.Unstructured
	namespaces := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		} else {
			rest = append(rest, o)
		}
		if ns := o.GetNamespace(); ns != "" {
			namespaces[ns] = true
		}
	}
	var names []string
	for _, o := range crds {
		if _, err := c.Dynamic.Resource(crdGVR).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply CRD %s: %w", o.GetName(), err)
		}
		names = append(names, o.GetName())
	}
	if err := c.waitEstablished(ctx, names, timeout); err != nil {
		return err
	}
	for ns := range namespaces {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName(ns)
		if _, err := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).
			Apply(ctx, ns, u, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	mapper, err := c.mapper()
	if err != nil {
		return err
	}
	for _, o := range rest {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		var r interface {
			Apply(context.Context, string, *unstructured.Unstructured, metav1.ApplyOptions, ...string) (*unstructured.Unstructured, error)
		} = c.Dynamic.Resource(m.Resource)
		if o.GetNamespace() != "" {
			r = c.Dynamic.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := r.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply %s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	return nil
}

// mapper maps kinds to resources through the API server's discovery.
func (c *Clients) mapper() (meta.RESTMapper, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), nil
}
