package util

import (
	"context"
	"fmt"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/testbed/cluster/stages"
)

// Timeout and Interval bound every Eventually of the helpers.
const (
	Timeout  = 60 * time.Second
	Interval = 250 * time.Millisecond
)

// JobPods lists the pods the training-operator created for a job.
func JobPods(ctx context.Context, c client.Client, ns, job string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kftraining.JobNameLabel: job})
	return pods.Items, err
}

// ExpectJobPods waits until the job has n pods and returns them.
func ExpectJobPods(ctx context.Context, c client.Client, ns, job string, n int) []corev1.Pod {
	var pods []corev1.Pod
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		var err error
		pods, err = JobPods(ctx, c, ns, job)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(pods).To(gomega.HaveLen(n), "pods of PyTorchJob %s/%s", ns, job)
	}, Timeout, Interval).Should(gomega.Succeed())
	return pods
}

// ExpectPodsOnDistinctNodes waits until every pod of the job is bound, checks that no two
// share a node and that each node is one of allowed, and returns the nodes.
func ExpectPodsOnDistinctNodes(ctx context.Context, c client.Client, ns, job string, n int, allowed []string) []string {
	var nodes []string
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		pods, err := JobPods(ctx, c, ns, job)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(pods).To(gomega.HaveLen(n))
		nodes = nodes[:0]
		for _, p := range pods {
			g.Expect(p.Spec.NodeName).NotTo(gomega.BeEmpty(), "pod %s not bound", p.Name)
			nodes = append(nodes, p.Spec.NodeName)
		}
	}, Timeout, Interval).Should(gomega.Succeed())
	seen := map[string]bool{}
	for _, node := range nodes {
		gomega.ExpectWithOffset(1, seen[node]).To(gomega.BeFalse(), "two pods of %s on node %s", job, node)
		seen[node] = true
	}
	gomega.ExpectWithOffset(1, nodes).To(gomega.HaveEach(gomega.BeElementOf(allowed)))
	return nodes
}

// ExpectPodsInPhase waits until every pod of the job is in phase.
func ExpectPodsInPhase(ctx context.Context, c client.Client, ns, job string, n int, phase corev1.PodPhase) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		pods, err := JobPods(ctx, c, ns, job)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(pods).To(gomega.HaveLen(n))
		for _, p := range pods {
			g.Expect(p.Status.Phase).To(gomega.Equal(phase), "pod %s", p.Name)
		}
	}, Timeout, Interval).Should(gomega.Succeed())
}

// ExpectUnschedulable waits until the job's pods exist and kube-scheduler reports them
// Unschedulable, then checks that they stay unbound for hold.
func ExpectUnschedulable(ctx context.Context, c client.Client, ns, job string, n int, hold time.Duration) {
	unbound := func(g gomega.Gomega) {
		pods, err := JobPods(ctx, c, ns, job)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(pods).To(gomega.HaveLen(n))
		for _, p := range pods {
			g.Expect(p.Spec.NodeName).To(gomega.BeEmpty(), "pod %s bound to %s", p.Name, p.Spec.NodeName)
			g.Expect(p.Status.Phase).To(gomega.Equal(corev1.PodPending))
		}
	}
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		unbound(g)
		pods, _ := JobPods(ctx, c, ns, job)
		for _, p := range pods {
			g.Expect(podCondition(&p, corev1.PodScheduled)).To(gomega.HaveField("Reason", corev1.PodReasonUnschedulable))
		}
	}, Timeout, Interval).Should(gomega.Succeed())
	gomega.ConsistentlyWithOffset(1, unbound, hold, Interval).Should(gomega.Succeed())
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

// CompleteJobPods ends every pod of the job the way the testbed's simulated training does:
// it sets the completion annotation, and the kwok stage moves the pod to Succeeded.
func CompleteJobPods(ctx context.Context, c client.Client, ns, job string) error {
	pods, err := JobPods(ctx, c, ns, job)
	if err != nil {
		return err
	}
	for i := range pods {
		p := &pods[i]
		patch := client.MergeFrom(p.DeepCopy())
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[stages.CompleteAnnotation] = stages.CompleteSucceeded
		if err := c.Patch(ctx, p, patch); err != nil {
			return fmt.Errorf("annotate pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// ExpectJobCondition waits until the PyTorchJob has condition cond with status True.
func ExpectJobCondition(ctx context.Context, c client.Client, ns, job string, cond kftraining.JobConditionType) {
	expectJobCondition(ctx, c, ns, job, cond, Timeout)
}

// ExpectJobConditionWithin is ExpectJobCondition with its own timeout.
func ExpectJobConditionWithin(ctx context.Context, c client.Client, ns, job string, cond kftraining.JobConditionType, timeout time.Duration) {
	expectJobCondition(ctx, c, ns, job, cond, timeout)
}

func expectJobCondition(ctx context.Context, c client.Client, ns, job string, cond kftraining.JobConditionType, timeout time.Duration) {
	gomega.EventuallyWithOffset(2, func(g gomega.Gomega) {
		var j kftraining.PyTorchJob
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: job}, &j)).To(gomega.Succeed())
		var status corev1.ConditionStatus
		for _, c := range j.Status.Conditions {
			if c.Type == cond {
				status = c.Status
			}
		}
		g.Expect(status).To(gomega.Equal(corev1.ConditionTrue), "PyTorchJob %s/%s condition %s; conditions %v", ns, job, cond, j.Status.Conditions)
	}, timeout, Interval).Should(gomega.Succeed())
}
