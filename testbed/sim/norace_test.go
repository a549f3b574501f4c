//go:build !race

package sim

// raceEnabled is true when the tests run with the race detector.
const raceEnabled = false
