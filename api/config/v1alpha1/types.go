package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Configuration is the operator's configuration file.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`

	// Queues are the PickyMan queues jobs may name in the pickyman.dev/queue label.
	Queues []Queue `json:"queues"`
	// Policy is the scheduling policy and its parameters.
	Policy Policy `json:"policy"`
	// Overhead holds the overhead-model defaults used until a ModelProfile has learned
	// its own.
	Overhead Overhead `json:"overhead"`
	// Protection bounds how often a job may be preempted.
	Protection Protection `json:"protection"`
	// Checkpoint configures the checkpoint handshake with the agents.
	Checkpoint Checkpoint `json:"checkpoint"`
	// ReservationTimeout releases a queued job's reservation this long after it was made
	// if the job has not started.
	ReservationTimeout metav1.Duration `json:"reservationTimeout"`
	// ScheduleInterval is the resync: the longest time between two scheduling cycles.
	// Cycles run at events (a job submitted, started, suspended or finished, a node
	// changed), at the time the policy's decisions can next change without one (a Tiresias
	// queue threshold, a PickyMan protection ending) and when a reservation times out; the
	// resync reads what sends no event, such as the training progress agents annotate.
	ScheduleInterval metav1.Duration `json:"scheduleInterval"`
	// NodeLostTimeout is how long a node that runs a job may be NotReady before the job is
	// sent back to the queue, to resume elsewhere from the epoch its pods last completed
	// (a deleted node sends its jobs back at once). Kubernetes evicts pods from such a node
	// after the same default (tolerationSeconds 300).
	NodeLostTimeout metav1.Duration `json:"nodeLostTimeout"`
	// GPUResource is the extended resource that counts GPUs.
	GPUResource string `json:"gpuResource"`
	// GPUProductLabel is the node label that names the GPU model.
	GPUProductLabel string `json:"gpuProductLabel"`
	// Manager holds the controller manager's settings.
	Manager Manager `json:"manager"`
	// ClientConnection paces the operator's requests to the API server.
	ClientConnection ClientConnection `json:"clientConnection"`
	// WriteConcurrency is the most Allocation writes one step of a scheduling cycle sends
	// at once (reservations, preemptions, starts: each step's writes touch different
	// Allocations).
	WriteConcurrency int32 `json:"writeConcurrency"`
	// JobConcurrency is how many jobs of each kind the job controller reconciles at once,
	// and how many preemptions the handshake controller carries out at once. Their work is
	// API round trips (an Allocation created and queued, a job suspended or started, the
	// handshake's steps), so a burst of submissions queues behind too few workers: 4
	// queued 14.8 jobs a second on the 2-core scale cluster (docs/operator.md).
	JobConcurrency int32 `json:"jobConcurrency"`
}

// ClientConnection paces the API client (client-go's token bucket).
type ClientConnection struct {
	// QPS is the sustained rate of requests per second.
	QPS float32 `json:"qps"`
	// Burst is how many requests may go at once above QPS.
	Burst int32 `json:"burst"`
}

// Queue is a PickyMan queue.
type Queue struct {
	Name string `json:"name"`
	// Priority is the default priority of the queue's jobs; a job's PriorityClass
	// overrides it.
	Priority int32 `json:"priority,omitempty"`
	// Namespaces, if set, are the only namespaces whose jobs may use the queue: the
	// webhook refuses a job of any other namespace that names it (as a Kueue LocalQueue
	// binds a ClusterQueue to a namespace). Empty: every namespace may.
	Namespaces []string `json:"namespaces,omitempty"`
}

// Overhead holds the default parameters of the overhead model.
type Overhead struct {
	WriteBytesPerSecond float64         `json:"writeBytesPerSecond"`
	ReadBytesPerSecond  float64         `json:"readBytesPerSecond"`
	ContainerStart      metav1.Duration `json:"containerStart"`
	Warmup              metav1.Duration `json:"warmup"`
	// GracePeriod is how long a job suspended now keeps its GPUs.
	GracePeriod metav1.Duration `json:"gracePeriod"`
}

// Protection keeps jobs from being preempted too often.
type Protection struct {
	// MinRunAfterResume protects a job for this long after each admission.
	MinRunAfterResume metav1.Duration `json:"minRunAfterResume"`
	// MaxPreemptions protects a job preempted this many times; 0 means no limit.
	MaxPreemptions int32 `json:"maxPreemptions"`
}

// Checkpoint configures the handshake.
type Checkpoint struct {
	// BoundaryDeadline bounds how long a boundary suspend may take before the operator
	// suspends the job anyway.
	BoundaryDeadline metav1.Duration `json:"boundaryDeadline"`
	// NowDeadline bounds an immediate suspend's checkpoint.
	NowDeadline metav1.Duration `json:"nowDeadline"`
}

// Manager holds the controller manager's settings.
type Manager struct {
	MetricsBindAddress     string `json:"metricsBindAddress"`
	HealthProbeBindAddress string `json:"healthProbeBindAddress"`
	// LeaderElection makes the replicas elect one leader, which alone schedules; on unless
	// set to false (the installed Deployment runs two replicas).
	LeaderElection *bool `json:"leaderElection,omitempty"`
	// LeaderElectionNamespace is where the lease lives.
	LeaderElectionNamespace string `json:"leaderElectionNamespace,omitempty"`
	WebhookPort             int    `json:"webhookPort"`
	WebhookCertDir          string `json:"webhookCertDir,omitempty"`
}
