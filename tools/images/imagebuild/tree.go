// Package imagebuild assembles PickyMan's container images without a container engine: a
// file tree (Tree) becomes a reproducible tar layer, the layers and a fixed config become a
// go-containerregistry v1.Image, and the image is written as a `docker save` archive.
//
// It owns everything that decides an image's bytes: the base trees (scratch: /etc/passwd,
// /etc/group and /tmp; glibc: the same plus the ELF interpreter and the shared libraries a
// binary needs, copied from the host), the tar headers (fixed mtime, uid/gid 0, sorted
// entries) and the image config (fixed created time, no host data). The same inputs give the
// same digest.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Entry is one file, directory or symbolic link of a Tree.
type Entry struct {
	// Name is the path in the image, without a leading slash ("etc/passwd").
	Name string
	// Mode holds the type (fs.ModeDir, fs.ModeSymlink or none for a regular file) and the
	// permission bits, fs.ModeSticky included.
	Mode fs.FileMode
	// Data is a regular file's content.
	Data []byte
	// Link is a symbolic link's target, as stored (relative or absolute).
	Link string
}

// Tree is a file tree to be written as one layer. Every entry is owned by root; parent
// directories are added (0755) when a child is.
type Tree struct {
	entries map[string]Entry
}

// NewTree returns an empty tree.
func NewTree() *Tree { return &Tree{entries: map[string]Entry{}} }

// clean turns an image path ("/etc/passwd", "etc/passwd/") into an entry name ("etc/passwd").
func clean(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

// add stores e, and its parent directories where missing. An entry that is already there
// with other content is an error: the tree must not depend on the order of additions.
func (t *Tree) add(e Entry) error {
	e.Name = clean(e.Name)
	if e.Name == "" {
		return fmt.Errorf("empty entry name")
	}
	if dir := path.Dir(e.Name); dir != "." {
		if old, ok := t.entries[dir]; ok && !old.Mode.IsDir() {
			return fmt.Errorf("%s: parent %s is not a directory", e.Name, dir)
		} else if !ok {
			if err := t.add(Entry{Name: dir, Mode: fs.ModeDir | 0o755}); err != nil {
				return err
			}
		}
	}
	if old, ok := t.entries[e.Name]; ok {
		if old.Mode != e.Mode || old.Link != e.Link || !bytes.Equal(old.Data, e.Data) {
			return fmt.Errorf("%s: added twice with different content", e.Name)
		}
		return nil
	}
	t.entries[e.Name] = e
	return nil
}

// Dir adds a directory with the given permission bits (fs.ModeSticky allowed).
func (t *Tree) Dir(name string, perm fs.FileMode) error {
	return t.add(Entry{Name: name, Mode: fs.ModeDir | perm&(fs.ModePerm|fs.ModeSticky)})
}

// File adds a regular file.
func (t *Tree) File(name string, perm fs.FileMode, data []byte) error {
	return t.add(Entry{Name: name, Mode: perm & fs.ModePerm, Data: data})
}

// Symlink adds a symbolic link to target.
func (t *Tree) Symlink(name, target string) error {
	return t.add(Entry{Name: name, Mode: fs.ModeSymlink | 0o777, Link: target})
}

// Entries returns the entries sorted by name, so that a directory comes before what it holds.
func (t *Tree) Entries() []Entry {
	out := make([]Entry, 0, len(t.entries))
	for _, e := range t.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Tar writes the tree as a tar stream: sorted entries, every mtime set to mtime, uid/gid 0,
// no user or group names, no access or change times.
func (t *Tree) Tar(w io.Writer, mtime time.Time) error {
	tw := tar.NewWriter(w)
	mtime = mtime.UTC().Truncate(time.Second)
	for _, e := range t.Entries() {
		h := &tar.Header{Name: e.Name, Mode: int64(e.Mode.Perm()), ModTime: mtime, Format: tar.FormatPAX}
		if e.Mode&fs.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		switch {
		case e.Mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, e.Name+"/"
		case e.Mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.Link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("tar %s: %w", e.Name, err)
		}
		if _, err := tw.Write(e.Data); err != nil {
			return fmt.Errorf("tar %s: %w", e.Name, err)
		}
	}
	return tw.Close()
}

// Layer returns the tree as a gzip-compressed layer (Docker media type).
func (t *Tree) Layer(mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	if err := t.Tar(&buf, mtime); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithCompressedCaching)
}
