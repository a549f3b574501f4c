// Package srtf is the shortest-remaining-time-first baseline policy with oracle knowledge
// of remaining run times; it preempts running jobs immediately.
package srtf
