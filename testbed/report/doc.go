// Package report turns the runs of several policies on one trace into the testbed's report
// (docs/simulator.md): results.json (per-policy figures side by side plus the trace,
// cluster, seed and the fields that were synthesized), jobs.csv (one row per job per
// policy), report.html (one file with nothing fetched: a verdict of PickyMan against the
// best baseline, one inline SVG plot per question with a style per policy, a legend that
// hides policies, values under the pointer, and the table) and, for terminals, the verdict
// and a plain-text side-by-side table.
package report
