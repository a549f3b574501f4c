// Package traces reads public GPU-cluster traces (Tiresias, Muri, Microsoft Philly job log and
// the Philly-derived CSV, Helios, Alibaba PAI v2020, Alibaba v2023 openb, Blox) and the
// project's own pickyman CSV into one normalized record, Job; synthesizes the fields a trace
// lacks deterministically from a seed and the job ID (synth.go); reads cluster descriptions
// (cluster.go); and generates synthetic traces with Philly-like distributions (generate.go).
//
// Open detects a file's format and streams its jobs one record at a time; ReadAll returns
// them in arrival order. docs/traces.md documents every format's mapping, the rows each
// reader skips, and every distribution with its source.
package traces
