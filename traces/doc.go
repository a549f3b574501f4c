// Package traces reads public GPU-cluster traces (Tiresias, Muri, Microsoft Philly, the
// Philly-derived CSV, Helios, Alibaba PAI v2020, Alibaba v2023 openb, Blox) into one
// normalized job record, synthesizes the fields a trace lacks deterministically from a
// seed, and generates synthetic traces with Philly-like distributions.
package traces
