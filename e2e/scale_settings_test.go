//go:build e2e && scale

package e2e

import configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"

// The scale spec runs the operator with the settings docs/operator.md gives for a cluster of
// 1,000 nodes and thousands of jobs submitted at once (At scale): 64 job-controller workers, so
// that queueing keeps pace with submissions; 32 concurrent Allocation writes, so that
// admissions keep pace with queueing at a few hundred ms per write; and a client bucket of
// 200 requests a second (burst 400) for the four or so requests each job costs the operator.
func init() {
	sizeConfig = func(c *configv1.Configuration) {
		c.JobConcurrency = 64
		c.WriteConcurrency = 32
		c.ClientConnection.QPS, c.ClientConnection.Burst = 200, 400
	}
}
