// Package importrules holds the test that keeps the project's layering (docs/architecture.md,
// "Layers"): the scheduling core and the operator never import the agent or the testbed, the
// agent never imports the testbed, api/ imports nothing of the project outside api/, traces/
// nothing of the project at all, and there is no top-level internal/.
package importrules
