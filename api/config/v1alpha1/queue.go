package v1alpha1

import "slices"

// Admits reports whether a job of namespace ns may use the queue.
func (q *Queue) Admits(ns string) bool {
	return len(q.Namespaces) == 0 || slices.Contains(q.Namespaces, ns)
}
