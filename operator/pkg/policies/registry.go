// Package policies registers the scheduling policies of the core. Each policy lives in its
// own package; this file lists them explicitly (no init-time registration), so adding a
// policy touches its package, its arguments in api/config/v1alpha1, and one line of the
// registry below.
package policies

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/overhead"
	"github.com/pickyman/pickyman/operator/pkg/policies/fifo"
	"github.com/pickyman/pickyman/operator/pkg/policies/kueue"
	"github.com/pickyman/pickyman/operator/pkg/policies/pickyman"
	"github.com/pickyman/pickyman/operator/pkg/policies/sjf"
	"github.com/pickyman/pickyman/operator/pkg/policies/srtf"
	"github.com/pickyman/pickyman/operator/pkg/policies/tiresias"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Args names the arguments field of configv1.Policy a policy reads.
type Args string

// The arguments a policy may take; ArgsNone: none.
const (
	ArgsNone     Args = ""
	ArgsFIFO     Args = "fifo"
	ArgsTiresias Args = "tiresias"
	ArgsPickyMan Args = "pickyman"
)

// Options are the settings of the operator's configuration outside the policy section
// that a policy reads; a nil field keeps the policy's own default (the simulator's).
type Options struct {
	// Protection gives PickyMan its protection after a (re)start and its preemption budget.
	Protection *configv1.Protection
	// Overhead gives PickyMan's overhead model its starting parameters.
	Overhead *configv1.Overhead
}

// entry is one registered policy: its name, the arguments it takes, and its constructor,
// which gets validated arguments.
type entry struct {
	name string
	args Args
	new  func(p configv1.Policy, o Options) (sched.Policy, error)
}

// registry lists the policies in the order Names reports them.
var registry = []entry{
	{fifo.Name, ArgsFIFO, func(p configv1.Policy, _ Options) (sched.Policy, error) {
		var o fifo.Options
		if p.FIFO != nil {
			o.Backfill = p.FIFO.Backfill
		}
		return fifo.New(o), nil
	}},
	{sjf.Name, ArgsNone, func(configv1.Policy, Options) (sched.Policy, error) { return sjf.New(), nil }},
	{srtf.Name, ArgsNone, func(configv1.Policy, Options) (sched.Policy, error) { return srtf.New(), nil }},
	{tiresias.Name, ArgsTiresias, newTiresias},
	{kueue.Name, ArgsNone, func(configv1.Policy, Options) (sched.Policy, error) { return kueue.New(), nil }},
	{pickyman.Name, ArgsPickyMan, newPickyMan(func(*pickyman.Options) {})},
	{pickyman.Name + "-blind", ArgsPickyMan, newPickyMan(func(o *pickyman.Options) { o.Variant = pickyman.Blind })},
	{pickyman.Name + "-oracle", ArgsPickyMan, newPickyMan(func(o *pickyman.Options) { o.Variant = pickyman.Oracle })},
	{pickyman.Name + "-now", ArgsPickyMan, newPickyMan(func(o *pickyman.Options) { o.Variant = pickyman.Now })},
	{pickyman.Name + "-flat", ArgsPickyMan, newPickyMan(func(o *pickyman.Options) { o.FlatPriority = true })},
	{pickyman.Name + "-rigid", ArgsPickyMan, newPickyMan(func(o *pickyman.Options) { o.Rigid = true })},
}

// New returns the policy p names, configured by its arguments and opts. The arguments are
// checked by Validate first, so a program gets the errors a configuration file would.
func New(p configv1.Policy, opts Options) (sched.Policy, error) {
	if errs := Validate(p, field.NewPath("policy")); len(errs) > 0 {
		return nil, fmt.Errorf("policies: %w", errs.ToAggregate())
	}
	pol, err := lookup(p.Name).new(p, opts)
	if err != nil {
		return nil, fmt.Errorf("policies: %s: %w", p.Name, err)
	}
	return pol, nil
}

// ByName returns the named policy with its default arguments (the simulator's).
func ByName(name string) (sched.Policy, error) {
	return New(configv1.Policy{Name: name}, Options{})
}

// Validate checks a policy section: the name is registered, only the arguments of that
// policy are set, and they are valid. It is the configv1.PolicyValidator of the operator's
// configuration.
func Validate(p configv1.Policy, path *field.Path) field.ErrorList {
	e := lookup(p.Name)
	if e == nil {
		return field.ErrorList{field.NotSupported(path.Child("name"), p.Name, Names())}
	}
	var errs field.ErrorList
	for args, set := range map[Args]bool{ArgsFIFO: p.FIFO != nil, ArgsTiresias: p.Tiresias != nil, ArgsPickyMan: p.PickyMan != nil} {
		if set && args != e.args {
			errs = append(errs, field.Forbidden(path.Child(string(args)), fmt.Sprintf("policy %s does not take %s arguments", p.Name, args)))
		}
	}
	errs = append(errs, configv1.ValidateFIFOArgs(p.FIFO, path.Child(string(ArgsFIFO)))...)
	errs = append(errs, configv1.ValidateTiresiasArgs(p.Tiresias, path.Child(string(ArgsTiresias)))...)
	errs = append(errs, configv1.ValidatePickyManArgs(p.PickyMan, path.Child(string(ArgsPickyMan)))...)
	return errs
}

// ArgsOf says which arguments the named policy takes (ArgsNone for an unknown name).
func ArgsOf(name string) Args {
	if e := lookup(name); e != nil {
		return e.args
	}
	return ArgsNone
}

// Names lists the registered policies in a stable order.
func Names() []string {
	out := make([]string, len(registry))
	for i, r := range registry {
		out[i] = r.name
	}
	return out
}

func lookup(name string) *entry {
	for i := range registry {
		if registry[i].name == name {
			return &registry[i]
		}
	}
	return nil
}

func newTiresias(p configv1.Policy, _ Options) (sched.Policy, error) {
	var o tiresias.Options
	if a := p.Tiresias; a != nil {
		for _, th := range a.Thresholds {
			o.Thresholds = append(o.Thresholds, th.Duration)
		}
		o.StarveLimit = a.StarveLimit
	}
	return tiresias.New(o)
}

// newPickyMan builds the constructor of pickyman or one of its ablations (variant sets
// what sets the ablation apart). The policy names itself from its options: pickyman with
// flatPriority set reports itself as pickyman-flat.
func newPickyMan(variant func(*pickyman.Options)) func(configv1.Policy, Options) (sched.Policy, error) {
	return func(p configv1.Policy, opts Options) (sched.Policy, error) {
		o := pickyman.DefaultOptions()
		variant(&o)
		if pr := opts.Protection; pr != nil {
			o.Protect = pr.MinRunAfterResume.Duration
			if pr.MaxPreemptions > 0 {
				o.Budget = pr.MaxPreemptions
			}
		}
		if oh := opts.Overhead; oh != nil {
			o.Overhead = overhead.Params{
				Start:   oh.ContainerStart.Duration + oh.Warmup.Duration,
				WriteBW: oh.WriteBytesPerSecond,
				ReadBW:  oh.ReadBytesPerSecond,
				Grace:   oh.GracePeriod.Duration,
			}
		}
		o.ApplyArgs(p.PickyMan)
		return pickyman.New(o), nil
	}
}
