// Package v1alpha1 is the operator's configuration file format
// (kind Configuration, apiVersion config.pickyman.dev/v1alpha1): queues, the policy and its
// parameters, overhead defaults, protections and manager settings, with defaults and
// validation.
//
// +kubebuilder:object:generate=true
package v1alpha1
