package imagebuild

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// mergedUsrRoot makes a host tree laid out as Debian 12's (merged /usr), with a copy of the
// host's loader and libc, and returns its root.
func mergedUsrRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"usr/lib/x86_64-linux-gnu", "usr/lib64", "usr/lib/i386-linux-gnu", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"lib":                            "usr/lib",
		"lib64":                          "usr/lib64",
		"usr/lib64/ld-linux-x86-64.so.2": "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
		"etc/loop1":                      "loop2",
		"etc/loop2":                      "loop1",
		"etc/up":                         "../usr/lib/./x86_64-linux-gnu/libc.so.6",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, lib := range []string{"ld-linux-x86-64.so.2", "libc.so.6"} {
		b, err := os.ReadFile("/lib/x86_64-linux-gnu/" + lib)
		if err != nil {
			t.Fatalf("this test needs the host's glibc (Debian amd64): %v", err)
		}
		if err := os.WriteFile(filepath.Join(root, "usr/lib/x86_64-linux-gnu", lib), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A 32-bit-looking decoy: not an ELF file of the binary's machine, so never picked.
	if err := os.WriteFile(filepath.Join(root, "usr/lib/libc.so.6"), []byte("not ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// names lists a tree's entries as "name", "name/" (directory) or "name -> target".
func names(tr *Tree) []string {
	var out []string
	for _, e := range tr.Entries() {
		switch {
		case e.Mode.IsDir():
			out = append(out, e.Name+"/")
		case e.Mode&fs.ModeSymlink != 0:
			out = append(out, e.Name+" -> "+e.Link)
		default:
			out = append(out, e.Name)
		}
	}
	return out
}

func TestCopyPath(t *testing.T) {
	root := mergedUsrRoot(t)
	for _, tc := range []struct {
		path     string
		wantFile string
		want     []string
		wantErr  string
	}{
		{path: "/lib64/ld-linux-x86-64.so.2", wantFile: "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", want: []string{
			"lib -> usr/lib", "lib64 -> usr/lib64", "usr/", "usr/lib/", "usr/lib/x86_64-linux-gnu/",
			"usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "usr/lib64/",
			"usr/lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"}},
		{path: "/usr/lib/x86_64-linux-gnu/libc.so.6", wantFile: "usr/lib/x86_64-linux-gnu/libc.so.6", want: []string{
			"usr/", "usr/lib/", "usr/lib/x86_64-linux-gnu/", "usr/lib/x86_64-linux-gnu/libc.so.6"}},
		{path: "/etc/up", wantFile: "usr/lib/x86_64-linux-gnu/libc.so.6", want: []string{
			"etc/", "etc/up -> ../usr/lib/./x86_64-linux-gnu/libc.so.6", "usr/", "usr/lib/",
			"usr/lib/x86_64-linux-gnu/", "usr/lib/x86_64-linux-gnu/libc.so.6"}},
		{path: "/etc/loop1", wantErr: "too many levels"},
		{path: "/lib/missing.so", wantErr: "no such file"},
		{path: "/lib/x86_64-linux-gnu/libc.so.6/x", wantErr: "not a directory"},
		{path: "/usr/lib", wantErr: "is a directory"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			tr := NewTree()
			file, err := CopyPath(tr, root, tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if file != tc.wantFile {
				t.Errorf("file %s, want %s", file, tc.wantFile)
			}
			if got := names(tr); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCopyELFDeps(t *testing.T) {
	root := mergedUsrRoot(t)
	// /bin/true needs the loader and libc.so.6; libc.so.6 needs the loader again.
	tr := NewTree()
	copied, err := CopyELFDeps(tr, root, "/bin/true", DefaultLibDirs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "usr/lib/x86_64-linux-gnu/libc.so.6"}
	if !reflect.DeepEqual(copied, want) {
		t.Errorf("copied %q, want %q", copied, want)
	}
	if got := names(tr); !reflect.DeepEqual(got[:2], []string{"lib -> usr/lib", "lib64 -> usr/lib64"}) {
		t.Errorf("entries %q: want the /lib and /lib64 links", got)
	}

	// The loader itself is static: nothing to copy.
	copied, err = CopyELFDeps(NewTree(), root, filepath.Join(root, "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"), DefaultLibDirs)
	if err != nil || copied != nil {
		t.Errorf("static: copied %q, err %v", copied, err)
	}

	// Without the directory that holds libc.so.6 (only the decoy is left), it fails.
	if _, err := CopyELFDeps(NewTree(), root, "/bin/true", []string{"/usr/lib"}); err == nil || !strings.Contains(err.Error(), "libc.so.6") {
		t.Errorf("error %v, want libc.so.6 not found", err)
	}
}
