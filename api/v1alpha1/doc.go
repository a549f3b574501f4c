// Package v1alpha1 holds PickyMan's API types (group pickyman.dev, version v1alpha1):
// ModelProfile, the per-model profile database of the execution-time predictor and the
// overhead model (docs/policy.md), and the well-known labels and annotations that
// jobs and pods carry.
//
// +kubebuilder:object:generate=true
// +groupName=pickyman.dev
package v1alpha1
