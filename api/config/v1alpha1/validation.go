package v1alpha1

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a defaulted configuration; validatePolicy checks its policy section (the
// policy registry's Validate). Each error names the field and says why.
func (c *Configuration) Validate(validatePolicy PolicyValidator) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	qp := field.NewPath("queues")
	if len(c.Queues) == 0 {
		errs = append(errs, field.Required(qp, "at least one queue is needed"))
	}
	for i, q := range c.Queues {
		p := qp.Index(i).Child("name")
		if msgs := validation.IsDNS1123Label(q.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, q.Name, msgs[0]))
		}
		if seen[q.Name] {
			errs = append(errs, field.Duplicate(p, q.Name))
		}
		seen[q.Name] = true
		nss := map[string]bool{}
		for j, ns := range q.Namespaces {
			np := qp.Index(i).Child("namespaces").Index(j)
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				errs = append(errs, field.Invalid(np, ns, msgs[0]))
			}
			if nss[ns] {
				errs = append(errs, field.Duplicate(np, ns))
			}
			nss[ns] = true
		}
	}
	errs = append(errs, validatePolicy(c.Policy, field.NewPath("policy"))...)
	op := field.NewPath("overhead")
	if c.Overhead.WriteBytesPerSecond <= 0 {
		errs = append(errs, field.Invalid(op.Child("writeBytesPerSecond"), c.Overhead.WriteBytesPerSecond, "must be positive"))
	}
	if c.Overhead.ReadBytesPerSecond <= 0 {
		errs = append(errs, field.Invalid(op.Child("readBytesPerSecond"), c.Overhead.ReadBytesPerSecond, "must be positive"))
	}
	for name, d := range map[string]int64{
		"containerStart": int64(c.Overhead.ContainerStart.Duration),
		"warmup":         int64(c.Overhead.Warmup.Duration),
		"gracePeriod":    int64(c.Overhead.GracePeriod.Duration),
	} {
		if d < 0 {
			errs = append(errs, field.Invalid(op.Child(name), d, "must not be negative"))
		}
	}
	if c.Protection.MaxPreemptions < 0 {
		errs = append(errs, field.Invalid(field.NewPath("protection", "maxPreemptions"), c.Protection.MaxPreemptions, "must not be negative"))
	}
	if c.ScheduleInterval.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("scheduleInterval"), c.ScheduleInterval.Duration.String(), "must be positive"))
	}
	if c.NodeLostTimeout.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("nodeLostTimeout"), c.NodeLostTimeout.Duration.String(), "must be positive"))
	}
	if c.Checkpoint.BoundaryDeadline.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("checkpoint", "boundaryDeadline"), c.Checkpoint.BoundaryDeadline.Duration.String(), "must be positive"))
	}
	if c.Checkpoint.NowDeadline.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("checkpoint", "nowDeadline"), c.Checkpoint.NowDeadline.Duration.String(), "must be positive"))
	}
	if c.ClientConnection.QPS <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("clientConnection", "qps"), c.ClientConnection.QPS, "must be positive"))
	}
	if c.ClientConnection.Burst < 1 {
		errs = append(errs, field.Invalid(field.NewPath("clientConnection", "burst"), c.ClientConnection.Burst, "must be at least 1"))
	}
	if c.WriteConcurrency < 1 {
		errs = append(errs, field.Invalid(field.NewPath("writeConcurrency"), c.WriteConcurrency, "must be at least 1"))
	}
	if c.JobConcurrency < 1 {
		errs = append(errs, field.Invalid(field.NewPath("jobConcurrency"), c.JobConcurrency, "must be at least 1"))
	}
	if c.GPUResource == "" {
		errs = append(errs, field.Required(field.NewPath("gpuResource"), "names the GPU extended resource"))
	}
	return errs
}
