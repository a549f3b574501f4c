package predictor

import (
	"math"
	"testing"
)

func TestWindowMedianRejectsBursts(t *testing.T) {
	w := NewWindowMedian(9, 3)
	for _, x := range []float64{100, 101, 99, 5000, 100, 102, 98, 0.5, 100} {
		w.Add(x)
	}
	v, ok := w.Value()
	if !ok || math.Abs(v-100) > 1 {
		t.Errorf("Value = %v, %v; want about 100 with the bursts 5000 and 0.5 rejected", v, ok)
	}
	if w.N() != 9 {
		t.Errorf("N = %d, want 9", w.N())
	}
}

func TestWindowMedianFollowsLevelChange(t *testing.T) {
	w := NewWindowMedian(5, 3)
	for i := 0; i < 5; i++ {
		w.Add(100)
	}
	for i := 0; i < 5; i++ {
		w.Add(200)
	}
	if v, _ := w.Value(); v != 200 {
		t.Errorf("Value = %v after the window filled with 200, want 200", v)
	}
}

func TestWindowMedianIgnoresInvalid(t *testing.T) {
	w := NewWindowMedian(3, 3)
	w.Add(0)
	w.Add(-5)
	w.Add(math.Inf(1))
	w.Add(math.NaN())
	if _, ok := w.Value(); ok || w.N() != 0 {
		t.Errorf("invalid samples were accepted: N = %d", w.N())
	}
}

func TestEWMA(t *testing.T) {
	e := &EWMA{Alpha: 0.5, Reject: 2, MaxRejects: 2}
	for _, x := range []float64{100, 100, 1000, 100} {
		e.Add(x)
	}
	if v, _ := e.Value(); v != 100 {
		t.Errorf("Value = %v, want 100 with the burst of 1000 rejected", v)
	}
	// A lasting change is followed after MaxRejects rejections.
	for i := 0; i < 10; i++ {
		e.Add(400)
	}
	if v, _ := e.Value(); math.Abs(v-400) > 5 {
		t.Errorf("Value = %v after a lasting change to 400, want about 400", v)
	}
}
