package agentsim

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

// AnnotationResumeLatest on a pod (value "true") asks the testbed agent to start the pod's
// simulated training from the newest checkpoint that the pod of the same name wrote before,
// when the pod carries no resume annotation. This is what a training script that reloads its
// newest checkpoint from shared storage does when a scheduler that knows nothing of
// checkpoints restarts it: the replay under real Kueue (testbed/replay) marks its pods so,
// and Kueue's preemptions lose the work since the last checkpoint, as the physics of every
// policy say (docs/simulator.md), instead of the whole job. A pod without the annotation
// starts from its resume annotation, or from the start.
const AnnotationResumeLatest = "pickyman.dev/sim-resume-latest"

// latestCheckpoints are the newest checkpoints of the pods that resume from them, by pod
// namespace/name (a PyTorchJob's pods keep their names across a suspend).
type latestCheckpoints struct {
	mu sync.Mutex
	by map[string]agentv1alpha1.ResumePoint
}

// save keeps the trainer's newest checkpoint when its pod is gone, if the pod resumes from it.
func (l *latestCheckpoints) save(t *trainer) {
	if !t.resumeLatest || t.phase == complete || t.lastCkpt.Epoch <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string]agentv1alpha1.ResumePoint{}
	}
	l.by[t.pod.Key()] = t.lastCkpt
}

// resume is the coordinator's ResumeFallback: the newest checkpoint of a pod that resumes from
// it.
func (l *latestCheckpoints) resume(p *corev1.Pod) (agentv1alpha1.ResumePoint, bool) {
	if p.Annotations[AnnotationResumeLatest] != "true" {
		return agentv1alpha1.ResumePoint{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rp, ok := l.by[p.Namespace+"/"+p.Name]
	return rp, ok
}
