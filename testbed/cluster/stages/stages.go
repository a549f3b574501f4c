package stages

const (
	// CompleteAnnotation, set on a Running pod of a fake node, ends the pod.
	CompleteAnnotation = "pickyman.dev/complete"
	// CompleteSucceeded ends the pod with phase Succeeded and exit code 0.
	CompleteSucceeded = "true"
	// CompleteFailed ends the pod with phase Failed and exit code 1.
	CompleteFailed = "failed"

	// FakeNodeAnnotation marks a node that the kwok controller manages.
	FakeNodeAnnotation = "kwok.x-k8s.io/node"
	// FakeNodeValue is the value of FakeNodeAnnotation on every testbed node.
	FakeNodeValue = "fake"
)
