package sim

import (
	"time"

	"github.com/pickyman/pickyman/testbed/physics"
)

// Epoch is the wall-clock time at which every simulation starts (trace offset zero).
var Epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Physics is the cost model every policy pays (testbed/physics, shared with the testbed
// agent).
type Physics = physics.Physics

// Elasticity makes a share of a trace's jobs elastic (traces carry no elastic bounds).
type Elasticity struct {
	// Share is the fraction of jobs of 2 GPUs or more that are elastic, chosen by a hash of
	// the job's ID and the seed (0: none, the default).
	Share float64
	// Grow is how many times its requested workers an elastic job may grow to (its
	// MaxWorkers; default 1: it may shrink to half and grow back, not beyond).
	Grow int32
}

// DefaultPhysics returns the documented defaults (physics.Default).
func DefaultPhysics() Physics { return physics.Default() }

// Config controls an Engine.
type Config struct {
	Physics Physics
	// Seed seeds the per-job noise (with the job's ID).
	Seed int64
	// Elastic makes a share of the jobs elastic; see newJob for their bounds.
	Elastic Elasticity
	// Tick, if positive, polls: a scheduling cycle runs this often while a job is queued,
	// besides the cycles at events and at the policy's wake-up times (sched.Waker). Off by
	// default: a policy's decisions change without an event only at the times it names, so
	// a poll only adds cycles (it is there to compare with fixed-tick simulators).
	Tick time.Duration
	// ReservationTimeout releases a reservation this long after it was made if the job
	// has not started (default 1 h).
	ReservationTimeout time.Duration
	// Check turns on the invariant checks: decisions valid (sched.Validate and the
	// engine's own checks), no node over-committed counting reservations, work never
	// negative, every job ends exactly once, and no job lost at the end.
	Check bool
	// SeriesPoints bounds the time series (default 512 points).
	SeriesPoints int
	// MaxIdleWakes is how many cycles in a row that only a wake-up (or a Tick) called may
	// pass with jobs queued, nothing running, nothing arriving and no decisions before the
	// run fails as stuck (default 10000). A policy that leaves jobs queued on an idle
	// cluster and asks for no wake-up fails the run at once.
	MaxIdleWakes int
}

// DefaultConfig returns a Config with DefaultPhysics and the documented defaults.
func DefaultConfig() Config {
	return Config{
		Physics:            DefaultPhysics(),
		Seed:               1,
		ReservationTimeout: time.Hour,
		SeriesPoints:       512,
		MaxIdleWakes:       10000,
	}
}

func (c *Config) defaults() {
	d := DefaultConfig()
	if c.ReservationTimeout <= 0 {
		c.ReservationTimeout = d.ReservationTimeout
	}
	if c.SeriesPoints <= 0 {
		c.SeriesPoints = d.SeriesPoints
	}
	if c.MaxIdleWakes <= 0 {
		c.MaxIdleWakes = d.MaxIdleWakes
	}
	if c.Physics.CheckpointPeriod <= 0 {
		c.Physics.CheckpointPeriod = 1
	}
	if c.Elastic.Grow <= 0 {
		c.Elastic.Grow = 1
	}
	if c.Physics.Serial <= 0 || c.Physics.Serial > 1 {
		c.Physics.Serial = d.Physics.Serial
	}
}
