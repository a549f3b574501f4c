// Package stages names the signals that drive fake pods on the testbed's kwok nodes through
// their life: the stage definitions in config/kwok/ select on these keys and values. It has no
// dependencies, so the node agent and the simulated training can import it cheaply.
//
// A pod bound to a fake node becomes Running at once. It stays Running until something sets
// the CompleteAnnotation on it: CompleteSucceeded ends it with phase Succeeded (every container
// terminated with exit code 0), CompleteFailed with phase Failed (exit code 1). A deleted pod is
// removed at once. Nothing completes after a fixed delay: the testbed's simulated training
// decides when a job is done.
package stages
