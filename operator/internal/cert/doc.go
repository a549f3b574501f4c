// Package cert makes the webhook server's certificates for clusters without cert-manager
// (the local testbed): a self-signed CA and a serving certificate for the webhook Service,
// written where the webhook server reads them, and the CA put into the caBundle of the
// operator's webhook configurations. Clusters with cert-manager use config/certmanager.
package cert
