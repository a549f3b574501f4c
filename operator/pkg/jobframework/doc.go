// Package jobframework is the seam between PickyMan and the training-job kinds it manages
// (docs/operator.md). A job kind is one adapter that implements GenericJob: it reads
// the gang shape (pod sets), queue and hints from the job, suspends and resumes it through
// the kind's own suspend field, reports when it has finished, and maps each of its pods to a
// pod set and an index so that the operator's binder can place every pod on the node its
// gang placement chose. Kinds are listed explicitly in Integrations (no init-time
// registration): PyTorchJob (kubeflow.org/v1), RayJob (ray.io/v1) and TrainJob
// (trainer.kubeflow.org/v1alpha1), one file each.
package jobframework
