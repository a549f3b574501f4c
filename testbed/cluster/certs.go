package cluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"
)

// webhookCerts is a CA and a serving certificate signed by it, PEM encoded, with the key names
// of the training-operator's webhook Secret.
type webhookCerts struct {
	CACert, CAKey, Cert, Key []byte
}

// Data returns the certificates under the training-operator's Secret keys.
func (c webhookCerts) Data() map[string][]byte {
	return map[string][]byte{"ca.crt": c.CACert, "ca.key": c.CAKey, "tls.crt": c.Cert, "tls.key": c.Key}
}

// newWebhookCerts makes a CA and a certificate for dnsName (and the addresses ips), valid from
// now for ten years.
func newWebhookCerts(dnsName string, now time.Time, ips ...net.IP) (webhookCerts, error) {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return webhookCerts{}, err
	}
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "training-operator-ca", Organization: []string{"training-operator"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return webhookCerts{}, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return webhookCerts{}, err
	}
	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: dnsName},
		DNSNames:     []string{dnsName},
		IPAddresses:  ips,
		NotBefore:    ca.NotBefore,
		NotAfter:     ca.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, ca, &key.PublicKey, caKey)
	if err != nil {
		return webhookCerts{}, err
	}
	return webhookCerts{
		CACert: pemBlock("CERTIFICATE", caDER),
		CAKey:  pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(caKey)),
		Cert:   pemBlock("CERTIFICATE", srvDER),
		Key:    pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)),
	}, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
