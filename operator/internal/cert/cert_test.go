package cert

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestGenerateVerifiesForServiceHosts(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f, err := Generate(ServiceHosts("pickyman-webhook", "pickyman-system"), now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := f.Write(dir); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatalf("key pair does not load: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	ca, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("ca.crt holds no certificate")
	}
	for _, host := range []string{"pickyman-webhook.pickyman-system.svc", "127.0.0.1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: now}); err != nil {
			t.Errorf("certificate does not verify for %s: %v", host, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: roots, CurrentTime: now}); err == nil {
		t.Error("certificate verifies for a host it was not made for")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: roots, CurrentTime: now.Add(48 * time.Hour)}); err == nil {
		t.Error("certificate verifies after it expired")
	}
}
