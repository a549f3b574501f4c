// Package profile is PickyMan's model-profile database (docs/policy.md,
// "Prediction"): for every model it keeps samples of observed training jobs (GPUs, epoch
// time, resume time, checkpoint write time, dataset and checkpoint bytes) and fits the epoch
// time against the allocation as t(G) = a + b/G by least squares.
//
// A fit is trusted only when it rests on at least MinSamples jobs and its relative
// root-mean-square residual stays under a bound; the predictor falls back to other sources
// otherwise. Store is the storage interface; Memory keeps profiles in memory (the
// simulator), File keeps them in a JSON file written atomically (a single operator without a
// cluster), and the operator's ModelProfile custom resource implements the same interface.
package profile
