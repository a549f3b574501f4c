package cert

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestSyncOnce(t *testing.T) {
	key := types.NamespacedName{Namespace: "pickyman-system", Name: "pickyman-webhook-server-cert"}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	c := fake.NewClientBuilder().WithObjects(sec).Build()
	dir := filepath.Join(t.TempDir(), "certs")
	s := &Sync{Reader: c, Secret: key, Dir: dir}
	ctx := context.Background()

	// Installed empty: nothing to write yet, and nothing written.
	if ok, err := s.SyncOnce(ctx); ok || err != nil {
		t.Fatalf("empty Secret: %v, %v; want false, nil", ok, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tls.crt")); !os.IsNotExist(err) {
		t.Fatalf("tls.crt written from an empty Secret (%v)", err)
	}

	for i, data := range []map[string][]byte{
		{"tls.crt": []byte("cert-1"), "tls.key": []byte("key-1"), "ca.crt": []byte("ca-1")},
		// A rotation replaces every file.
		{"tls.crt": []byte("cert-2"), "tls.key": []byte("key-2"), "ca.crt": []byte("ca-2")},
	} {
		sec.Data = data
		if err := c.Update(ctx, sec); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.SyncOnce(ctx); !ok || err != nil {
			t.Fatalf("round %d: %v, %v; want true, nil", i, ok, err)
		}
		for name, want := range data {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || string(got) != string(want) {
				t.Errorf("round %d: %s = %q, %v; want %q", i, name, got, err, want)
			}
		}
		left, _ := filepath.Glob(filepath.Join(dir, ".*"))
		if len(left) > 0 {
			t.Errorf("round %d: temporary files left: %v", i, left)
		}
	}

	// A Secret that cannot be read is an error, not an empty certificate.
	s.Secret.Name = "missing"
	if _, err := s.SyncOnce(ctx); err == nil {
		t.Error("missing Secret: no error")
	}
}
