package cert

import (
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Rotation says where the operator keeps the webhook certificates it makes and rotates
// itself: in a Secret of its namespace, which every replica writes into the webhook server's
// certificate directory (Sync), so that all replicas serve the same certificate and the
// webhook configurations carry the one CA that signed it.
type Rotation struct {
	// Namespace and Secret name the Secret (config/default installs it empty).
	Namespace, Secret string
	// Service is the webhook Service; the certificate is valid for its DNS names.
	Service string
	// CertDir is where Sync writes the Secret's files.
	CertDir string
	// Mutating and Validating name the webhook configurations that get the CA.
	Mutating, Validating string
}

// AddRotator registers the certificate rotator (github.com/open-policy-agent/cert-controller,
// as Kueue uses it) with the manager. Every replica runs it, leader or not: each must find
// the certificate in CertDir before it serves, and all of them keep the CA injected. The
// returned channel is closed once the certificate is in CertDir and the CA is in both
// webhook configurations; the webhooks must not be served before.
func AddRotator(mgr ctrl.Manager, r Rotation) (<-chan struct{}, error) {
	ready := make(chan struct{})
	hosts := ServiceHosts(r.Service, r.Namespace)
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: r.Namespace, Name: r.Secret},
		CertDir:        r.CertDir,
		CAName:         "pickyman-ca",
		CAOrganization: "pickyman",
		DNSName:        hosts[0],
		ExtraDNSNames:  hosts[1:2],
		IsReady:        ready,
		Webhooks: []rotator.WebhookInfo{
			{Name: r.Mutating, Type: rotator.Mutating},
			{Name: r.Validating, Type: rotator.Validating},
		},
		FieldOwner:            "pickyman-operator",
		RequireLeaderElection: false,
	})
	return ready, err
}
