// Package simtest holds builders for trace jobs and clusters and small policies that tests
// of the simulator, metrics and report use. It is test support only.
package simtest
