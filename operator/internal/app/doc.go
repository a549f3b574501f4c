// Package app is the operator's command: flags, configuration file, self-signed webhook
// certificates for the local testbed, and the manager's run. The main package only parses
// flags and calls Run.
package app
