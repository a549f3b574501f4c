// Package policies registers the scheduling policies of the core. Each policy lives in its
// own package; this file lists them explicitly.
package policies

import (
	"fmt"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Options are settings shared by every policy; a policy ignores what it does not use.
type Options struct {
	// Params holds policy-specific settings as name=value strings.
	Params map[string]string
}

// New returns the named policy.
func New(name string, opts Options) (sched.Policy, error) {
	return nil, fmt.Errorf("policies: unknown policy %q", name)
}

// Names lists the registered policies in a stable order.
func Names() []string { return nil }
