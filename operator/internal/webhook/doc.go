// Package webhook holds the operator's admission webhooks for managed jobs (docs/operator.md,
// "Webhooks"). The mutating webhook makes a new job PickyMan's: it is created suspended, and
// every pod template gets schedulerName pickyman (the operator binds the pods itself,
// exactly per its gang placement), the Allocation label and the agent's socket. The
// validating webhook rejects, naming the field and the reason, a job without a GPU limit,
// with a worker that fits on no node, naming an unknown queue, and an edit that changes the
// gang shape or the queue of a job that has been admitted.
package webhook
