package api

import (
	"time"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

// CounterFunc reads a cumulative receive-byte counter for a process (traffic.ReadNetDev).
type CounterFunc func(pid int) (int64, error)

// SampleTraffic reads the receive counter of one registered process of every pod and feeds
// the pod's rate estimator. Pods without a registered process are skipped.
func (r *Registry) SampleTraffic(read CounterFunc) {
	type probe struct {
		st  *podState
		pid int32
	}
	r.mu.Lock()
	var probes []probe
	for _, st := range r.pods {
		if rk := lowestRank(st); rk != nil && rk.pid > 0 {
			probes = append(probes, probe{st, rk.pid})
		}
	}
	r.mu.Unlock()
	for _, p := range probes {
		n, err := read(int(p.pid))
		if err != nil {
			continue // the process exited; the next sample uses another
		}
		now := r.clock.Now()
		r.mu.Lock()
		p.st.est.Observe(now, n)
		r.mu.Unlock()
	}
}

// Progress returns a pod's progress, false if the pod is unknown.
func (r *Registry) Progress(uid string) (agentv1alpha1.Progress, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.pods[uid]
	if !ok {
		return agentv1alpha1.Progress{}, false
	}
	return r.progress(st), true
}

// progress renders a pod's progress. r.mu must be held.
func (r *Registry) progress(st *podState) agentv1alpha1.Progress {
	p := agentv1alpha1.Progress{
		Epoch:        st.pod.Resume.Epoch,
		EpochsDone:   st.pod.Resume.Epoch,
		EpochSeconds: st.epochSeconds,
		ReadRate:     st.est.Rate(),
		Time:         r.clock.Now().UTC().Truncate(time.Millisecond),
	}
	if rk := lowestRank(st); rk != nil {
		if rk.epoch >= 0 {
			p.Epoch = rk.epoch
		}
		if rk.inEpoch {
			p.EpochStart = rk.epochStart.UTC()
		}
		p.EpochsDone = rk.next(st.pod.Resume.Epoch)
	}
	// Reported bytes are exact; the namespace counters are the fallback.
	p.ReadBytes = st.reportedBytes
	if p.ReadBytes == 0 {
		p.ReadBytes = st.est.Total()
	}
	return p
}

// PodProgress is a pod and its progress.
type PodProgress struct {
	Pod      Pod
	Progress agentv1alpha1.Progress
}

// All returns the progress of every pod.
func (r *Registry) All() []PodProgress {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]PodProgress, 0, len(r.pods))
	for _, st := range r.pods {
		out = append(out, PodProgress{Pod: st.pod, Progress: r.progress(st)})
	}
	return out
}
