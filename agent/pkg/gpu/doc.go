// Package gpu reads a node's GPUs behind one interface with two backends: NVML (the real
// driver library, through github.com/NVIDIA/go-nvml) and a fake one for fake GPU nodes whose
// utilization and memory follow the training the testbed simulates (docs/architecture.md and docs/testbed.md).
// It also renders the GPU feature-discovery labels that the agent publishes on its node.
package gpu
