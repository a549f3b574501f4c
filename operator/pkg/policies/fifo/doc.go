// Package fifo is the first-in-first-out baseline policy: jobs start in arrival order and
// are never preempted; optionally, later jobs backfill GPUs the head of the queue cannot
// use.
package fifo
