// Package testing holds the builders that every package's tests use to make scheduling-core
// objects (jobs, nodes, snapshots) in one line, and a generator of random but consistent
// snapshots for property tests. Import it as utiltesting.
package testing
