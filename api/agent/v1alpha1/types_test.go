package v1alpha1

import (
	"math"
	"strings"
	"testing"
)

func TestProgressValidate(t *testing.T) {
	ok := Progress{Epoch: 3, EpochsDone: 2, EpochSeconds: 120, ReadBytes: 1e9, ReadRate: 5e8}
	for name, tc := range map[string]struct {
		edit func(*Progress)
		want string // "" for valid
	}{
		"valid":                 {edit: func(*Progress) {}},
		"no epoch yet":          {edit: func(p *Progress) { *p = Progress{} }},
		"negative epochs done":  {edit: func(p *Progress) { p.EpochsDone = -1 }, want: "epochsDone"},
		"absurd epoch":          {edit: func(p *Progress) { p.Epoch = MaxEpochs + 1 }, want: "epoch "},
		"negative epoch time":   {edit: func(p *Progress) { p.EpochSeconds = -1 }, want: "epochSeconds"},
		"epoch time of a year":  {edit: func(p *Progress) { p.EpochSeconds = 365 * 24 * 3600 }, want: "epochSeconds"},
		"NaN epoch time":        {edit: func(p *Progress) { p.EpochSeconds = math.NaN() }, want: "epochSeconds"},
		"negative bytes":        {edit: func(p *Progress) { p.ReadBytes = -5 }, want: "readBytes"},
		"infinite rate":         {edit: func(p *Progress) { p.ReadRate = math.Inf(1) }, want: "readRate"},
		"negative rate":         {edit: func(p *Progress) { p.ReadRate = -1 }, want: "readRate"},
		"rate at the bound":     {edit: func(p *Progress) { p.ReadRate = MaxReadRate }},
		"epoch time at a bound": {edit: func(p *Progress) { p.EpochSeconds = MaxEpochSeconds }},
	} {
		t.Run(name, func(t *testing.T) {
			p := ok
			tc.edit(&p)
			check(t, p.Validate(), tc.want)
		})
	}
}

func TestCheckpointAckValidate(t *testing.T) {
	ok := CheckpointAck{RequestID: "r1", Epoch: 4, Bytes: 2e9, Seconds: 3, SuspendSeconds: 40}
	for name, tc := range map[string]struct {
		edit func(*CheckpointAck)
		want string
	}{
		"valid":                  {edit: func(*CheckpointAck) {}},
		"no request":             {edit: func(a *CheckpointAck) { a.RequestID = "" }, want: "requestId"},
		"negative epoch":         {edit: func(a *CheckpointAck) { a.Epoch = -2 }, want: "epoch"},
		"absurd epoch":           {edit: func(a *CheckpointAck) { a.Epoch = math.MaxInt32 }, want: "epoch"},
		"negative bytes":         {edit: func(a *CheckpointAck) { a.Bytes = -1 }, want: "bytes"},
		"NaN seconds":            {edit: func(a *CheckpointAck) { a.Seconds = math.NaN() }, want: "seconds"},
		"suspend of two days":    {edit: func(a *CheckpointAck) { a.SuspendSeconds = 2 * 24 * 3600 }, want: "suspendSeconds"},
		"negative suspend delay": {edit: func(a *CheckpointAck) { a.SuspendSeconds = -1 }, want: "suspendSeconds"},
	} {
		t.Run(name, func(t *testing.T) {
			a := ok
			tc.edit(&a)
			check(t, a.Validate(), tc.want)
		})
	}
}

func check(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("Validate: %v, want nil", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Validate: %v, want an error naming %q", err, want)
	}
}
