package jobframework

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
)

// MutateTemplates makes a job's pod templates PickyMan's: schedulerName pickyman (the binder
// places the pods), the Allocation label (the operator finds the pods by it), the agent's
// socket (volume, mount and environment), and, when resume is set, the resume-from
// annotation. It reports whether anything changed.
func MutateTemplates(job GenericJob, allocName, socketDir string, resume string) bool {
	changed := false
	for _, t := range job.PodTemplates() {
		if t.Spec.SchedulerName != v1alpha1.SchedulerName {
			t.Spec.SchedulerName = v1alpha1.SchedulerName
			changed = true
		}
		if t.Labels[v1alpha1.LabelAllocation] != allocName {
			if t.Labels == nil {
				t.Labels = map[string]string{}
			}
			t.Labels[v1alpha1.LabelAllocation] = allocName
			changed = true
		}
		if resume != "" && t.Annotations[agentv1alpha1.AnnotationResumeFrom] != resume {
			if t.Annotations == nil {
				t.Annotations = map[string]string{}
			}
			t.Annotations[agentv1alpha1.AnnotationResumeFrom] = resume
			changed = true
		}
		if addAgentSocket(&t.Spec, socketDir) {
			changed = true
		}
	}
	return changed
}

const agentVolume = "pickyman-agent"

func addAgentSocket(spec *corev1.PodSpec, dir string) bool {
	changed := false
	found := false
	for _, v := range spec.Volumes {
		found = found || v.Name == agentVolume
	}
	if !found {
		hp := corev1.HostPathDirectoryOrCreate
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: agentVolume, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hp}}})
		changed = true
	}
	sock := dir + "/" + agentv1alpha1.SocketName
	for i := range spec.Containers {
		c := &spec.Containers[i]
		// Read-only: a training container connects to the socket (which a read-only mount
		// allows) but can neither replace it nor leave anything in the directory that other
		// pods on the node share.
		has := false
		for k := range c.VolumeMounts {
			if m := &c.VolumeMounts[k]; m.Name == agentVolume {
				has = true
				if !m.ReadOnly {
					m.ReadOnly = true
					changed = true
				}
			}
		}
		if !has {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: agentVolume, MountPath: dir, ReadOnly: true})
			changed = true
		}
		if setEnv(c, agentv1alpha1.EnvSocket, sock) {
			changed = true
		}
		if setEnv(c, agentv1alpha1.EnvAgentUID, strconv.Itoa(agentv1alpha1.AgentUID)) {
			changed = true
		}
	}
	return changed
}

// setEnv adds name=value to a container's environment unless name is set already.
func setEnv(c *corev1.Container, name, value string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return false
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	return true
}

// ResumePoint is the value of the resume-from annotation for an Allocation.
func ResumePoint(a *v1alpha1.Allocation) string {
	rp := agentv1alpha1.ResumePoint{Epoch: a.Status.ResumeEpoch, Path: a.Status.ResumePath}
	if _, hi, ok := ElasticBounds(a); ok {
		// An elastic job learns its size and the size its epoch time and schedule refer to
		// (its reference count, by default its maximum).
		rp.WorldSize, rp.ReferenceWorldSize = PodCount(a.Spec.PodSets), hi
		if e := a.Spec.Elastic; e.ReferenceCount > 0 {
			rp.ReferenceWorldSize = hi - e.MaxCount + e.ReferenceCount
		}
	}
	b, _ := json.Marshal(rp)
	return string(b)
}

// PodCount is the number of pods of a gang.
func PodCount(sets []v1alpha1.PodSet) int32 {
	var n int32
	for _, s := range sets {
		n += s.Count
	}
	return n
}

// ElasticBounds returns an elastic Allocation's bounds in gang workers (all pods: the
// elastic pod set's bounds plus the other pod sets' fixed counts).
func ElasticBounds(a *v1alpha1.Allocation) (lo, hi int32, ok bool) {
	e := a.Spec.Elastic
	if e == nil || e.MaxCount <= e.MinCount {
		return 0, 0, false
	}
	fixed := int32(0)
	found := false
	for _, s := range a.Spec.PodSets {
		if s.Name == e.PodSet {
			found = true
			continue
		}
		fixed += s.Count
	}
	if !found {
		return 0, 0, false
	}
	return fixed + e.MinCount, fixed + e.MaxCount, true
}

// TemplateErrors names what of a pod template at path is no longer what MutateTemplates
// made it: the scheduler, the Allocation label, the agent's socket volume, its read-only
// mount and its environment in every container. An update of a managed job that changes
// them is refused: pods placed by another scheduler, or found under another Allocation,
// would hold GPUs PickyMan promised elsewhere, and a read-write socket mount lets a
// container replace the socket its neighbours connect to.
func TemplateErrors(path *field.Path, t *corev1.PodTemplateSpec, allocName, socketDir string) field.ErrorList {
	var errs field.ErrorList
	spec := path.Child("spec")
	if t.Spec.SchedulerName != v1alpha1.SchedulerName {
		errs = append(errs, field.Forbidden(spec.Child("schedulerName"),
			fmt.Sprintf("must stay %q: PickyMan places a managed job's pods on the GPUs it promised them", v1alpha1.SchedulerName)))
	}
	if got := t.Labels[v1alpha1.LabelAllocation]; got != allocName {
		errs = append(errs, field.Forbidden(path.Child("metadata", "labels").Key(v1alpha1.LabelAllocation),
			fmt.Sprintf("must stay %q: the operator finds the job's pods and counts their GPUs by it", allocName)))
	}
	found := false
	for i, v := range t.Spec.Volumes {
		if v.Name != agentVolume {
			continue
		}
		found = true
		if v.HostPath == nil || v.HostPath.Path != socketDir {
			errs = append(errs, field.Forbidden(spec.Child("volumes").Index(i),
				fmt.Sprintf("the agent's socket volume must stay the host directory %s", socketDir)))
		}
	}
	if !found {
		errs = append(errs, field.Required(spec.Child("volumes"), fmt.Sprintf("the agent's socket volume %q was removed", agentVolume)))
	}
	for i := range t.Spec.Containers {
		c := &t.Spec.Containers[i]
		cp := spec.Child("containers").Index(i)
		mounted := false
		for k, m := range c.VolumeMounts {
			if m.Name == agentVolume {
				mounted = true
				if !m.ReadOnly || m.MountPath != socketDir {
					errs = append(errs, field.Forbidden(cp.Child("volumeMounts").Index(k),
						fmt.Sprintf("the agent's socket directory must stay mounted read-only at %s", socketDir)))
				}
			}
		}
		if !mounted {
			errs = append(errs, field.Required(cp.Child("volumeMounts"), fmt.Sprintf("the agent's socket directory mount %q was removed", agentVolume)))
		}
		for _, name := range []string{agentv1alpha1.EnvSocket, agentv1alpha1.EnvAgentUID} {
			if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }) {
				errs = append(errs, field.Required(cp.Child("env"), fmt.Sprintf("%s was removed", name)))
			}
		}
	}
	return errs
}
