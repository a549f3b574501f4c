// Package report turns the runs of several policies on one trace into the testbed's report
// (docs/simulator.md): results.json (per-policy figures side by side plus the trace,
// cluster, seed and the fields that were synthesized), jobs.csv (one row per job per
// policy), report.html (self-contained: the table and PNG plots embedded as data URIs) and
// a plain-text side-by-side table for terminals.
package report
