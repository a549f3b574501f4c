package cert

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Files are the PEM files of a serving certificate.
type Files struct {
	CA, Cert, Key []byte
}

// Generate makes a CA and a serving certificate, valid for validity, for the given DNS names
// and IP addresses.
func Generate(hosts []string, now time.Time, validity time.Duration) (Files, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "pickyman-webhook-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return Files{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Files{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return Files{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Files{}, err
	}
	return Files{
		CA:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// ServiceHosts are the names a webhook Service answers to.
func ServiceHosts(service, namespace string) []string {
	return []string{
		fmt.Sprintf("%s.%s.svc", service, namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", service, namespace),
		service, "localhost", "127.0.0.1",
	}
}

// Write stores the files as ca.crt, tls.crt and tls.key in dir, the names the webhook server
// reads.
func (f Files) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"ca.crt": f.CA, "tls.crt": f.Cert, "tls.key": f.Key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// InjectCABundle sets caBundle on every webhook of the named mutating and validating
// configurations that do not already carry it.
func InjectCABundle(ctx context.Context, c client.Client, ca []byte, mutating, validating string) error {
	if mutating != "" {
		var m admissionregistrationv1.MutatingWebhookConfiguration
		if err := c.Get(ctx, types.NamespacedName{Name: mutating}, &m); err != nil {
			return err
		}
		changed := false
		for i := range m.Webhooks {
			if !bytes.Equal(m.Webhooks[i].ClientConfig.CABundle, ca) {
				m.Webhooks[i].ClientConfig.CABundle, changed = ca, true
			}
		}
		if changed {
			if err := c.Update(ctx, &m); err != nil {
				return err
			}
		}
	}
	if validating != "" {
		var v admissionregistrationv1.ValidatingWebhookConfiguration
		if err := c.Get(ctx, types.NamespacedName{Name: validating}, &v); err != nil {
			return err
		}
		changed := false
		for i := range v.Webhooks {
			if !bytes.Equal(v.Webhooks[i].ClientConfig.CABundle, ca) {
				v.Webhooks[i].ClientConfig.CABundle, changed = ca, true
			}
		}
		if changed {
			return c.Update(ctx, &v)
		}
	}
	return nil
}
