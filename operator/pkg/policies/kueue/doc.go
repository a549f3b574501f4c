// Package kueue is the priority-preemption baseline policy modeled on Kueue's
// LowerPriority within-cluster-queue preemption.
package kueue
