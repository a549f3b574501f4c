// Package jobframework is the seam between PickyMan and the training-job kinds it manages
// (docs/operator.md). A job kind is one adapter that implements GenericJob: it reads
// the gang shape (pod sets), queue and hints from the job, suspends and resumes it through
// the kind's own suspend field, reports when it has finished, and maps each of its pods to a
// pod set and an index so that the operator's binder can place every pod on the node its
// gang placement chose. Each kind's adapter is its own package beside the framework
// (pytorchjob: kubeflow.org/v1 PyTorchJob; rayjob: ray.io/v1 RayJob; trainjob:
// trainer.kubeflow.org/v1alpha1 TrainJob), listed explicitly in package kinds (no init-time
// registration). The framework also holds what every kind shares: the pod templates PickyMan
// writes (MutateTemplates), the resume point (ResumePoint) and the scheduler's view of a
// node (NodeView).
package jobframework
