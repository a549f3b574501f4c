package cert

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// SecretFiles are the keys of a TLS Secret that the webhook server reads, as files of the
// same names.
var SecretFiles = []string{"tls.crt", "tls.key", "ca.crt"}

// Sync writes the webhook certificate from its Secret into the webhook server's
// certificate directory and keeps it current. The replicas read the Secret themselves rather
// than mounting it: the kubelet refreshes a mounted Secret only at its next sync of the pod
// (a minute or more), which would hold a new replica's webhooks back that long after the
// rotator, or cert-manager, wrote the Secret. The webhook server reloads changed files.
type Sync struct {
	// Reader reads the Secret (uncached: the operator may read Secrets of its own namespace
	// only, which a cluster-wide cache could not list).
	Reader client.Reader
	Secret types.NamespacedName
	Dir    string
	// Fast is the poll period until the files are first written; Slow after that.
	Fast, Slow time.Duration

	once    sync.Once
	written chan struct{}
}

var (
	_ manager.Runnable               = (*Sync)(nil)
	_ manager.LeaderElectionRunnable = (*Sync)(nil)
)

// Written is closed once the certificate files are in Dir.
func (s *Sync) Written() <-chan struct{} { return s.writtenCh() }

func (s *Sync) writtenCh() chan struct{} {
	s.once.Do(func() { s.written = make(chan struct{}) })
	return s.written
}

// NeedLeaderElection is false: every replica serves the webhooks.
func (s *Sync) NeedLeaderElection() bool { return false }

// Start polls the Secret until ctx ends.
func (s *Sync) Start(ctx context.Context) error {
	written := s.writtenCh()
	log := ctrl.Log.WithName("cert-sync")
	first := true
	for {
		ok, err := s.SyncOnce(ctx)
		switch {
		case err != nil:
			log.Error(err, "webhook certificate", "secret", s.Secret)
		case ok && first:
			log.Info("webhook certificate written", "dir", s.Dir, "secret", s.Secret)
			first = false
			close(written)
		}
		period := s.Slow
		if first {
			period = s.Fast
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(period):
		}
	}
}

// SyncOnce writes the Secret's certificate files that differ from those in Dir; it reports
// whether the Secret holds a certificate (false while it is still empty).
func (s *Sync) SyncOnce(ctx context.Context) (bool, error) {
	var sec corev1.Secret
	if err := s.Reader.Get(ctx, s.Secret, &sec); err != nil {
		return false, err
	}
	if len(sec.Data["tls.crt"]) == 0 || len(sec.Data["tls.key"]) == 0 {
		return false, nil
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return false, err
	}
	// The key before the certificate: the webhook server reloads when the certificate
	// changes and must find the matching key then.
	for _, name := range []string{"tls.key", "ca.crt", "tls.crt"} {
		data, ok := sec.Data[name]
		if !ok {
			continue
		}
		path := filepath.Join(s.Dir, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := writeAtomic(path, data); err != nil {
			return false, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return true, nil
}

// writeAtomic replaces path with data through a rename, so that a reader never sees half a
// file.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
