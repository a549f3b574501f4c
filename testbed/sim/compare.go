package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/traces"
)

// Factory builds a fresh policy by name (policies.New in the command line).
type Factory func(name string) (sched.Policy, error)

// Comparison runs several policies on the same trace and cluster, each in its own
// goroutine with its own engine and policy instance.
type Comparison struct {
	engines []*Engine
	names   []string
}

// NewComparison builds one engine per policy name.
func NewComparison(cluster traces.Cluster, jobs []traces.Job, names []string, factory Factory, cfg Config) (*Comparison, error) {
	c := &Comparison{names: names}
	for _, n := range names {
		p, err := factory(n)
		if err != nil {
			return nil, err
		}
		e, err := New(cluster, jobs, p, cfg)
		if err != nil {
			return nil, err
		}
		c.engines = append(c.engines, e)
	}
	return c, nil
}

// Progress returns, per policy in order, the fraction of jobs done (0..1).
func (c *Comparison) Progress() []float64 {
	out := make([]float64, len(c.engines))
	for i, e := range c.engines {
		done, total := e.Progress()
		if total == 0 {
			out[i] = 1
			continue
		}
		out[i] = float64(done) / float64(total)
	}
	return out
}

// Names returns the policy names in order.
func (c *Comparison) Names() []string { return c.names }

// Run runs every engine concurrently and returns the runs in the order of the names. The
// first error cancels the others.
func (c *Comparison) Run(ctx context.Context) ([]*metrics.Run, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runs := make([]*metrics.Run, len(c.engines))
	errs := make([]error, len(c.engines))
	var wg sync.WaitGroup
	for i, e := range c.engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			r, err := e.Run(ctx)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", c.names[i], err)
				cancel()
				return
			}
			r.Wall = time.Since(start)
			runs[i] = r
		}()
	}
	wg.Wait()
	// Report the error that stopped the comparison, not the cancellations it caused.
	var first error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
		if first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	return runs, nil
}
