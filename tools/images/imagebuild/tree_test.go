package imagebuild

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"reflect"
	"testing"
	"time"
)

// readTar returns the headers of a tar stream, in order, with each file's content.
func readTar(t *testing.T, r io.Reader) ([]*tar.Header, map[string]string) {
	t.Helper()
	var hs []*tar.Header
	data := map[string]string{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return hs, data
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		data[h.Name] = string(b)
	}
}

func TestTreeTar(t *testing.T) {
	tr := NewTree()
	// Added out of order, with leading slashes and without parents: the tar is sorted, the
	// parents are there, and the names are relative.
	for _, err := range []error{
		tr.File("/usr/lib/x/libc.so.6", 0o755, []byte("libc")),
		tr.Dir("/tmp/", 0o777|fs.ModeSticky),
		tr.Symlink("lib", "usr/lib"),
		tr.File("etc/passwd", 0o644, []byte("root:x:0:0::/:/sbin/nologin\n")),
		tr.File("etc/passwd", 0o644, []byte("root:x:0:0::/:/sbin/nologin\n")), // same again: fine
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	mtime := time.Unix(1700000000, 999).In(time.FixedZone("X", 3600))
	if err := tr.Tar(&buf, mtime); err != nil {
		t.Fatal(err)
	}
	hs, data := readTar(t, &buf)
	type row struct {
		name string
		typ  byte
		mode int64
		link string
	}
	var got []row
	for _, h := range hs {
		got = append(got, row{h.Name, h.Typeflag, h.Mode, h.Linkname})
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owner %d:%d %q:%q, want 0:0 and no names", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if !h.ModTime.Equal(time.Unix(1700000000, 0)) || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() {
			t.Errorf("%s: times %v %v %v, want mtime 1700000000 only", h.Name, h.ModTime, h.AccessTime, h.ChangeTime)
		}
	}
	want := []row{
		{"etc/", tar.TypeDir, 0o755, ""},
		{"etc/passwd", tar.TypeReg, 0o644, ""},
		{"lib", tar.TypeSymlink, 0o777, "usr/lib"},
		{"tmp/", tar.TypeDir, 0o1777, ""},
		{"usr/", tar.TypeDir, 0o755, ""},
		{"usr/lib/", tar.TypeDir, 0o755, ""},
		{"usr/lib/x/", tar.TypeDir, 0o755, ""},
		{"usr/lib/x/libc.so.6", tar.TypeReg, 0o755, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries:\n got %v\nwant %v", got, want)
	}
	if data["usr/lib/x/libc.so.6"] != "libc" {
		t.Errorf("libc.so.6 content %q", data["usr/lib/x/libc.so.6"])
	}
}

func TestTreeConflicts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  func(*Tree) error
		second func(*Tree) error
	}{
		{"file content", func(t *Tree) error { return t.File("a", 0o644, []byte("1")) },
			func(t *Tree) error { return t.File("a", 0o644, []byte("2")) }},
		{"file mode", func(t *Tree) error { return t.File("a", 0o644, nil) },
			func(t *Tree) error { return t.File("a", 0o755, nil) }},
		{"link target", func(t *Tree) error { return t.Symlink("lib", "usr/lib") },
			func(t *Tree) error { return t.Symlink("lib", "/usr/lib") }},
		{"dir over link", func(t *Tree) error { return t.Symlink("lib", "usr/lib") },
			func(t *Tree) error { return t.Dir("lib", 0o755) }},
		{"file under file", func(t *Tree) error { return t.File("a", 0o644, nil) },
			func(t *Tree) error { return t.File("a/b", 0o644, nil) }},
		{"file under link", func(t *Tree) error { return t.Symlink("lib", "usr/lib") },
			func(t *Tree) error { return t.File("lib/libc.so.6", 0o644, nil) }},
		{"empty name", func(t *Tree) error { return nil },
			func(t *Tree) error { return t.File("/", 0o644, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTree()
			if err := tc.first(tr); err != nil {
				t.Fatal(err)
			}
			if err := tc.second(tr); err == nil {
				t.Error("no error")
			}
		})
	}
}
