package imagebuild

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// copyFile copies src to a new file in a new directory, with mode and mtime, and returns it.
func copyFile(t *testing.T, src string, mode os.FileMode, mtime time.Time) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dst, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestBuildReproducible(t *testing.T) {
	root := mergedUsrRoot(t)
	// The loader stands for a static binary: no interpreter, no DT_NEEDED.
	static := filepath.Join(root, "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
	spec := func(binary string, base Base) Spec {
		return Spec{Binary: binary, Base: base, User: "65532:65532", Epoch: time.Unix(1700000000, 0), HostRoot: root}
	}
	for _, tc := range []struct {
		name   string
		binary string
		base   Base
	}{
		{"scratch", static, Scratch},
		{"glibc", "/bin/true", Glibc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The same binary under another directory, mode and mtime gives the same image,
			// and the same archive bytes.
			a := copyFile(t, tc.binary, 0o755, time.Unix(1, 0))
			b := copyFile(t, tc.binary, 0o700, time.Now())
			var archives [][]byte
			var digest string
			for i, bin := range []string{a, b} {
				r, err := Build(spec(bin, tc.base))
				if err != nil {
					t.Fatal(err)
				}
				d, err := r.Image.Digest()
				if err != nil {
					t.Fatal(err)
				}
				if i == 1 && d.String() != digest {
					t.Errorf("digest %s, then %s", digest, d)
				}
				digest = d.String()
				out := filepath.Join(t.TempDir(), "img.tar")
				if err := Write(out, "example.com/x:v1", r.Image); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				archives = append(archives, data)
			}
			if !bytes.Equal(archives[0], archives[1]) {
				t.Error("archives differ")
			}

			// Each input that belongs in the image changes the digest.
			for _, change := range []struct {
				name string
				edit func(*Spec)
			}{
				{"epoch", func(s *Spec) { s.Epoch = s.Epoch.Add(time.Second) }},
				{"user", func(s *Spec) { s.User = "65532:0" }},
				{"entrypoint", func(s *Spec) { s.Entrypoint = "/bin/x" }},
			} {
				s := spec(a, tc.base)
				change.edit(&s)
				r, err := Build(s)
				if err != nil {
					t.Fatal(err)
				}
				if d, _ := r.Image.Digest(); d.String() == digest {
					t.Errorf("%s: same digest %s", change.name, d)
				}
			}
		})
	}
}

func TestBuildConfig(t *testing.T) {
	r, err := Build(Spec{Binary: "/bin/true", Base: Glibc, User: "65532:65532", Epoch: time.Unix(0, 0), HostRoot: mergedUsrRoot(t)})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := r.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || cf.RootFS.Type != "layers" || len(cf.RootFS.DiffIDs) != 2 ||
		!cf.Created.Equal(time.Unix(0, 0)) || cf.Config.User != "65532:65532" ||
		len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/true" {
		t.Errorf("config %+v", cf)
	}
	ref := "example.com/true:v1"
	out := filepath.Join(t.TempDir(), "true.tar")
	if err := Write(out, ref, r.Image); err != nil {
		t.Fatal(err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(out) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != ref {
		t.Errorf("manifest.json %+v, want one image tagged %s", m, ref)
	}
}

func TestBuildErrors(t *testing.T) {
	root := mergedUsrRoot(t)
	text := filepath.Join(root, "etc/text")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"dynamic on scratch", Spec{Binary: "/bin/true", Base: Scratch, User: "65532:65532"}, "use --base glibc"},
		{"unknown base", Spec{Binary: "/bin/true", Base: "alpine", User: "65532:65532", HostRoot: root}, "want scratch or glibc"},
		{"user name", Spec{Binary: "/bin/true", Base: Glibc, User: "nonroot", HostRoot: root}, "uid:gid"},
		{"relative entrypoint", Spec{Binary: "/bin/true", Base: Glibc, User: "0:0", Entrypoint: "true", HostRoot: root}, "absolute"},
		{"not ELF", Spec{Binary: text, Base: Scratch, User: "0:0"}, "ELF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Build(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
func TestParseUser(t *testing.T) {
	for _, tc := range []struct {
		in       string
		uid, gid int
		ok       bool
	}{
		{"65532:65532", 65532, 65532, true},
		{"0:0", 0, 0, true},
		{"1000:2000", 1000, 2000, true},
		{"65532", 0, 0, false},
		{"nonroot:nonroot", 0, 0, false},
		{"-1:0", 0, 0, false},
		{"", 0, 0, false},
	} {
		uid, gid, err := parseUser(tc.in)
		if (err == nil) != tc.ok || uid != tc.uid || gid != tc.gid {
			t.Errorf("parseUser(%q) = %d, %d, %v", tc.in, uid, gid, err)
		}
	}
}
