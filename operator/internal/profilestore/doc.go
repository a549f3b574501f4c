// Package profilestore implements the model-profile database (profile.Store) on the
// cluster-scoped ModelProfile custom resource, so that what the operator learns about each
// model survives restarts and can be read with kubectl (docs/policy.md). Each
// profile is one ModelProfile, named after its model; its status holds the samples and the
// current epoch-time fit.
package profilestore
