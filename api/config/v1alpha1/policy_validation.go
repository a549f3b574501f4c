package v1alpha1

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateFIFOArgs checks fifo's arguments; nil is valid (the defaults).
func ValidateFIFOArgs(*FIFOArgs, *field.Path) field.ErrorList { return nil }

// ValidateTiresiasArgs checks tiresias's arguments; nil is valid (the defaults).
func ValidateTiresiasArgs(a *TiresiasArgs, path *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	for i, th := range a.Thresholds {
		p := path.Child("thresholds").Index(i)
		switch {
		case th.Duration <= 0:
			errs = append(errs, field.Invalid(p, th.Duration.String(), "must be positive"))
		case i > 0 && th.Duration <= a.Thresholds[i-1].Duration:
			errs = append(errs, field.Invalid(p, th.Duration.String(), "must be greater than the threshold before it (thresholds increase)"))
		}
	}
	if a.StarveLimit < 0 {
		errs = append(errs, field.Invalid(path.Child("starveLimit"), a.StarveLimit, "must not be negative"))
	}
	return errs
}

// ValidatePickyManArgs checks the arguments of pickyman and its ablations; nil is valid
// (the defaults).
func ValidatePickyManArgs(a *PickyManArgs, path *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	atLeastOne := func(name string, v *int32) {
		if v != nil && *v < 1 {
			errs = append(errs, field.Invalid(path.Child(name), *v, "must be at least 1"))
		}
	}
	atLeastOne("maxConsidered", a.MaxConsidered)
	atLeastOne("maxScan", a.MaxScan)
	nonNegative := func(name string, v *float64) {
		if v != nil && *v < 0 {
			errs = append(errs, field.Invalid(path.Child(name), *v, "must not be negative"))
		}
	}
	nonNegative("aging", a.Aging)
	nonNegative("gpuCostWeight", a.GPUCostWeight)
	nonNegative("waitFloor", a.WaitFloor)
	nonNegative("exchange", a.Exchange)
	if a.Gain != nil && *a.Gain <= 0 {
		errs = append(errs, field.Invalid(path.Child("gain"), *a.Gain, "must be positive"))
	}
	if a.Unknown != nil && a.Unknown.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("unknown"), a.Unknown.Duration.String(), "must be positive"))
	}
	if a.Refresh != nil && a.Refresh.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("refresh"), a.Refresh.Duration.String(), "must not be negative"))
	}
	if a.BudgetEvery != nil && a.BudgetEvery.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("budgetEvery"), a.BudgetEvery.Duration.String(), "must not be negative"))
	}
	if a.HoldAfter != nil && a.HoldAfter.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("holdAfter"), a.HoldAfter.Duration.String(), "must not be negative"))
	}
	if a.Promote != nil && a.Promote.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("promote"), a.Promote.Duration.String(), "must not be negative"))
	}
	switch a.Smoothing {
	case "", "median", "ewma":
	default:
		errs = append(errs, field.NotSupported(path.Child("smoothing"), a.Smoothing, []string{"median", "ewma"}))
	}
	return errs
}
