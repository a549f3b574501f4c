// Package policies registers the scheduling policies of the core. Each policy lives in its
// own package; this file lists them explicitly (no init-time registration), so adding a
// policy touches its package and one line of the registry below.
package policies

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/policies/fifo"
	"github.com/pickyman/pickyman/operator/pkg/policies/kueue"
	"github.com/pickyman/pickyman/operator/pkg/policies/pickyman"
	"github.com/pickyman/pickyman/operator/pkg/policies/sjf"
	"github.com/pickyman/pickyman/operator/pkg/policies/srtf"
	"github.com/pickyman/pickyman/operator/pkg/policies/tiresias"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Options are settings shared by every policy; a policy ignores what it does not use.
type Options struct {
	// Params holds policy-specific settings as name=value strings. A name the policy does
	// not know is an error.
	Params map[string]string
}

// factory builds a policy from its parameters; it must consume (delete) every parameter
// it knows, so that unknown ones can be reported.
type factory func(p params) (sched.Policy, error)

// registry lists the policies in the order Names reports them.
var registry = []struct {
	name string
	new  factory
}{
	{fifo.Name, func(p params) (sched.Policy, error) {
		b, err := p.bool("backfill", false)
		return fifo.New(fifo.Options{Backfill: b}), err
	}},
	{sjf.Name, func(params) (sched.Policy, error) { return sjf.New(), nil }},
	{srtf.Name, func(params) (sched.Policy, error) { return srtf.New(), nil }},
	{tiresias.Name, func(p params) (sched.Policy, error) {
		th, err := p.durations("thresholds")
		if err != nil {
			return nil, err
		}
		sl, err := p.float("starvelimit", 0)
		if err != nil {
			return nil, err
		}
		return tiresias.New(tiresias.Options{Thresholds: th, StarveLimit: sl})
	}},
	{kueue.Name, func(params) (sched.Policy, error) { return kueue.New(), nil }},
	{pickyman.Name, func(p params) (sched.Policy, error) { return pickyman.FromParams(pickyman.Name, p) }},
	{pickyman.Name + "-blind", func(p params) (sched.Policy, error) { return pickyman.FromParams(pickyman.Name+"-blind", p) }},
	{pickyman.Name + "-oracle", func(p params) (sched.Policy, error) { return pickyman.FromParams(pickyman.Name+"-oracle", p) }},
	{pickyman.Name + "-now", func(p params) (sched.Policy, error) { return pickyman.FromParams(pickyman.Name+"-now", p) }},
	{pickyman.Name + "-flat", func(p params) (sched.Policy, error) { return pickyman.FromParams(pickyman.Name+"-flat", p) }},
	{pickyman.Name + "-rigid", func(p params) (sched.Policy, error) { return pickyman.FromParams(pickyman.Name+"-rigid", p) }},
}

// New returns the named policy configured by opts.Params.
func New(name string, opts Options) (sched.Policy, error) {
	for _, r := range registry {
		if r.name != name {
			continue
		}
		p := params{}
		for k, v := range opts.Params {
			p[k] = v
		}
		pol, err := r.new(p)
		if err != nil {
			return nil, fmt.Errorf("policies: %s: %w", name, err)
		}
		if len(p) > 0 {
			keys := make([]string, 0, len(p))
			for k := range p {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return nil, fmt.Errorf("policies: %s: unknown parameters %s", name, strings.Join(keys, ", "))
		}
		return pol, nil
	}
	return nil, fmt.Errorf("policies: unknown policy %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the registered policies in a stable order.
func Names() []string {
	out := make([]string, len(registry))
	for i, r := range registry {
		out[i] = r.name
	}
	return out
}

// params are policy parameters; each getter removes the parameter it reads.
type params map[string]string

func (p params) take(k string) (string, bool) {
	v, ok := p[k]
	delete(p, k)
	return v, ok
}

func (p params) bool(k string, def bool) (bool, error) {
	v, ok := p.take(k)
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, fmt.Errorf("parameter %s=%q: want true or false", k, v)
	}
	return b, nil
}

func (p params) float(k string, def float64) (float64, error) {
	v, ok := p.take(k)
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return def, fmt.Errorf("parameter %s=%q: want a number", k, v)
	}
	return f, nil
}

// durations parses a comma-separated list of Go durations ("1h,10h") or plain seconds.
func (p params) durations(k string) ([]time.Duration, error) {
	v, ok := p.take(k)
	if !ok {
		return nil, nil
	}
	var out []time.Duration
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if s, err := strconv.ParseFloat(f, 64); err == nil {
			out = append(out, time.Duration(s*float64(time.Second)))
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil {
			return nil, fmt.Errorf("parameter %s=%q: want durations (1h) or seconds, comma-separated", k, v)
		}
		out = append(out, d)
	}
	return out, nil
}
