// Package setup assembles the PickyMan operator from its configuration: the scheme, the
// controller manager (metrics, health probes, leader election, webhook server, a pod cache
// limited to PickyMan's pods), the configured policy, the controllers of package controller,
// the webhooks and the ModelProfile-backed profile store. The operator's main and the
// integration tests build the operator the same way, through New.
package setup
