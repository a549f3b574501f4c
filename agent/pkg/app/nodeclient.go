package app

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/agent/pkg/coord"
)

// NewNodeClient returns a client whose pod reads come from one informer that watches only
// the pods bound to node (field selector spec.nodeName), so the agent's periodic syncs cost
// the API server nothing: at steady state it holds one watch and writes only annotations.
// Every other read goes to the API server. onChange is called on every pod event (the
// coordinator's Trigger). The informer runs until ctx ends; the client is returned once it
// has synced.
func NewNodeClient(ctx context.Context, cfg *rest.Config, node string, onChange func()) (client.Client, error) {
	if node == "" {
		return nil, errors.New("node client: no node name")
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme: scheme,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Field: fields.OneTermEqualSelector(coord.NodeNameField, node)},
		},
	})
	if err != nil {
		return nil, err
	}
	// The coordinator lists with MatchingFields{spec.nodeName}; a cache answers that from an
	// index.
	if err := c.IndexField(ctx, &corev1.Pod{}, coord.NodeNameField, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return nil, err
	}
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	if onChange != nil {
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { onChange() },
			UpdateFunc: func(any, any) { onChange() },
			DeleteFunc: func(any) { onChange() },
		}); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("node client: the pod informer of node %s did not sync", node)
	}
	return client.New(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c, DisableFor: []client.Object{&corev1.Node{}}}})
}
