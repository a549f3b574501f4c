// Package agentsim is the testbed's agent (command pickyman-testbed-agent, docs/testbed.md):
// the node agent's registry, coordinator and metrics (agent/pkg) driven by a training
// simulator instead of training processes. One process
// serves every fake (kwok) GPU node of the testbed cluster and simulates the training of
// every pod bound to them, with the testbed's physics (docs/simulator.md) — container start, checkpoint load and
// warm-up on every start, epochs of the job's epoch time (by Amdahl's law at an elastic
// job's size when it differs from the size the epoch time refers to: Physics.EpochTime),
// storage reads of the dataset once per epoch, a checkpoint write before a boundary suspend
// — and the same per-job lognormal noise as the simulator (testbed/sim). A simulated pod goes through the same registry and
// coordinator as a real training process: it registers, reports epochs, polls for checkpoint
// requests and acknowledges them, so the operator sees the same annotations as on real
// nodes. When its last epoch ends, the pod is completed through the cluster's completion
// annotation (testbed/cluster/stages), which the kwok stages turn into phase Succeeded;
// except a pod of a RayCluster, which keeps running, as a Ray worker outlives its job: the
// job's end is read from the pods' progress (tools/kuberay's testbed dashboard) and KubeRay
// deletes the cluster.
//
// Durations read from pods are in trace time; the agent divides them by the time scale
// (TimeScale) and runs in real time, so what it reports (epoch seconds, read rates) is in the
// same real time that the operator observes.
package agentsim
