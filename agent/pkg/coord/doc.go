// Package coord connects the agent's registry of training pods to the Kubernetes API server
// (docs/agent.md): it lists and watches the pods bound to its node (field selector
// spec.nodeName, so it never sees, let alone trusts, a pod of another node), turns their
// annotations (package protocol) into the registry's view — checkpoint request, acknowledged
// request, resume point — and writes back acknowledgements and progress as annotations. All
// coordination state lives in the API server, so an agent restart loses nothing but the
// in-flight socket sessions; a request already acknowledged is not forwarded again.
//
// It also publishes the node's GPU feature-discovery labels.
package coord
