package controller

// The operator's permissions, least privilege; `make manifests` turns them into
// config/rbac/role.yaml. Leader election's lease permissions are a namespaced Role in
// config/rbac/leader_election_role.yaml.
//
// Jobs: read, suspend and resume, and mutate their templates.
// +kubebuilder:rbac:groups=kubeflow.org,resources=pytorchjobs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs,verbs=get;list;watch;update;patch
//
// Allocations: the operator's state; ModelProfiles: the profile database.
// +kubebuilder:rbac:groups=pickyman.dev,resources=allocations,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=pickyman.dev,resources=allocations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=pickyman.dev,resources=modelprofiles,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=pickyman.dev,resources=modelprofiles/status,verbs=get;update;patch
//
// Nodes for the snapshot; pods to annotate checkpoint requests and bind; priority classes
// for job priorities; events on jobs and pods.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods/binding,verbs=create
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// The operator's own webhook configurations, to inject the CA of the certificates it makes
// (update only those two; the rotator's cache lists and watches webhook configurations).
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;update,resourceNames=pickyman-mutating-webhook-configuration;pickyman-validating-webhook-configuration
//
// The rotated webhook certificate, a Secret in the operator's namespace only (a Role).
// +kubebuilder:rbac:groups="",namespace=pickyman-system,resources=secrets,verbs=get;list;watch;update
