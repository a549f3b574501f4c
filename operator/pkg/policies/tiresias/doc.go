// Package tiresias is the Tiresias baseline policy: discretized two-dimensional
// least-attained-service (2D-LAS) scheduling without prior knowledge of run times, with
// immediate preemption (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep
// Learning", NSDI 2019).
package tiresias
