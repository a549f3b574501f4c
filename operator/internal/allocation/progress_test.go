package allocation

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
)

func podWithProgress(v string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{agentv1alpha1.AnnotationProgress: v}}}
}

func TestReadProgressIgnoresReportsOutOfBounds(t *testing.T) {
	good := `{"epoch":3,"epochsDone":2,"epochSeconds":60,"readBytes":1000,"readRate":10}`
	for name, tc := range map[string]struct {
		pods []string
		want PodProgress
	}{
		"one report":          {pods: []string{good}, want: PodProgress{Pods: 1, EpochsDone: 2, EpochTime: time.Minute, ReadBytes: 1000, ReadRate: 10}},
		"gang: least epochs":  {pods: []string{good, `{"epoch":2,"epochsDone":1,"epochSeconds":90,"readBytes":5,"readRate":1}`}, want: PodProgress{Pods: 2, EpochsDone: 1, EpochTime: 90 * time.Second, ReadBytes: 1005, ReadRate: 11}},
		"malformed":           {pods: []string{good, `{"epoch":`}, want: PodProgress{Pods: 2, EpochsDone: 2, EpochTime: time.Minute, ReadBytes: 1000, ReadRate: 10}},
		"negative epochs":     {pods: []string{good, `{"epoch":0,"epochsDone":-5,"readBytes":0,"readRate":0}`}, want: PodProgress{Pods: 2, EpochsDone: 2, EpochTime: time.Minute, ReadBytes: 1000, ReadRate: 10}},
		"absurd epoch time":   {pods: []string{good, `{"epoch":3,"epochsDone":2,"epochSeconds":1e12,"readBytes":0,"readRate":0}`}, want: PodProgress{Pods: 2, EpochsDone: 2, EpochTime: time.Minute, ReadBytes: 1000, ReadRate: 10}},
		"negative read bytes": {pods: []string{`{"epoch":1,"epochsDone":0,"readBytes":-1,"readRate":0}`}, want: PodProgress{Pods: 1}},
		"absurd read rate":    {pods: []string{`{"epoch":1,"epochsDone":0,"readBytes":0,"readRate":1e30}`}, want: PodProgress{Pods: 1}},
	} {
		t.Run(name, func(t *testing.T) {
			var pods []*corev1.Pod
			for _, v := range tc.pods {
				pods = append(pods, podWithProgress(v))
			}
			if diff := cmp.Diff(tc.want, ReadProgress(pods)); diff != "" {
				t.Errorf("ReadProgress (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSchedJobEpochsDoneBoundedByTheJobsEpochs(t *testing.T) {
	a := &v1alpha1.Allocation{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"},
		Spec: v1alpha1.AllocationSpec{
			Epochs:  10,
			PodSets: []v1alpha1.PodSet{{Name: "worker", Count: 1, GPUsPerPod: 1}},
		},
		Status: v1alpha1.AllocationStatus{Phase: v1alpha1.AllocationQueued},
	}
	for name, tc := range map[string]struct {
		reported, resume, want int32
	}{
		"within":                 {reported: 4, want: 4},
		"resume point ahead":     {reported: 2, resume: 6, want: 6},
		"reported beyond epochs": {reported: 10_000, want: 10},
		"resume beyond epochs":   {resume: 500, want: 10},
	} {
		t.Run(name, func(t *testing.T) {
			c := a.DeepCopy()
			c.Status.ResumeEpoch = tc.resume
			j := SchedJob(c, PodProgress{EpochsDone: tc.reported}, time.Now())
			if j == nil {
				t.Fatal("SchedJob: nil")
			}
			if j.EpochsDone != tc.want {
				t.Errorf("EpochsDone = %d, want %d", j.EpochsDone, tc.want)
			}
		})
	}
}

// TestReadProgressEpochStart: a gang's epoch in progress began at the earliest start its
// pods report; a pod between epochs (no start) does not count.
func TestReadProgressEpochStart(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return t1.Add(d).Format(time.RFC3339Nano) }
	got := ReadProgress([]*corev1.Pod{
		podWithProgress(`{"epoch":3,"epochsDone":3,"epochStart":"` + at(2*time.Second) + `","epochSeconds":60,"readBytes":0,"readRate":0}`),
		podWithProgress(`{"epoch":3,"epochsDone":3,"epochStart":"` + at(0) + `","epochSeconds":60,"readBytes":0,"readRate":0}`),
		podWithProgress(`{"epoch":3,"epochsDone":3,"epochSeconds":60,"readBytes":0,"readRate":0}`),
	})
	if !got.EpochStart.Equal(t1) {
		t.Errorf("EpochStart = %v, want the earliest, %v", got.EpochStart, t1)
	}
}

// TestSchedJobSinceCheckpoint: a running job's work since its last checkpoint is the time
// into the epoch its pods report in progress (a suspend now loses it; the overhead model and
// the predictor read it), as the simulator's jobs carry it.
func TestSchedJobSinceCheckpoint(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	started := metav1.NewTime(now.Add(-time.Hour))
	a := &v1alpha1.Allocation{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"},
		Spec: v1alpha1.AllocationSpec{
			Epochs:  100,
			PodSets: []v1alpha1.PodSet{{Name: "worker", Count: 1, GPUsPerPod: 1}},
		},
		Status: v1alpha1.AllocationStatus{Phase: v1alpha1.AllocationAdmitted, FirstAdmitted: &started, LastAdmitted: &started,
			Placement: []v1alpha1.NodeAssignment{{PodSet: "worker", Node: "n1", Pods: 1, GPUs: 1}}},
	}
	for name, tc := range map[string]struct {
		phase v1alpha1.AllocationPhase
		prog  PodProgress
		want  time.Duration
	}{
		"into the epoch":           {prog: PodProgress{EpochTime: 100 * time.Second, EpochStart: now.Add(-30 * time.Second)}, want: 30 * time.Second},
		"first epoch, no time yet": {prog: PodProgress{EpochStart: now.Add(-40 * time.Second)}, want: 40 * time.Second},
		"between epochs":           {prog: PodProgress{EpochTime: 100 * time.Second}, want: 0},
		"a boundary not reported":  {prog: PodProgress{EpochTime: 100 * time.Second, EpochStart: now.Add(-250 * time.Second)}, want: 50 * time.Second},
		"agent's clock ahead":      {prog: PodProgress{EpochTime: 100 * time.Second, EpochStart: now.Add(5 * time.Second)}, want: 0},
		"report of an earlier run": {prog: PodProgress{EpochTime: 100 * time.Second, EpochStart: now.Add(-2 * time.Hour)}, want: 0},
		"queued":                   {phase: v1alpha1.AllocationQueued, prog: PodProgress{EpochTime: 100 * time.Second, EpochStart: now.Add(-30 * time.Second)}, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			c := a.DeepCopy()
			if tc.phase != "" {
				c.Status.Phase = tc.phase
			}
			j := SchedJob(c, tc.prog, now)
			if j == nil {
				t.Fatal("SchedJob: nil")
			}
			if j.SinceCheckpoint != tc.want {
				t.Errorf("SinceCheckpoint = %v, want %v", j.SinceCheckpoint, tc.want)
			}
		})
	}
}
