package main

// The checks of the archives that `make images` wrote (run by `make test-images`). They read
// the archives named by these variables, and fail, never skip, when one is missing:
//
//	PICKYMAN_OPERATOR_ARCHIVE, PICKYMAN_AGENT_ARCHIVE  the archives (default ../../bin/images/*.tar);
//	                                                   the binary they were built from is the
//	                                                   archive's path without ".tar", and
//	                                                   digests.txt is next to them
//	PICKYMAN_OPERATOR_TAG, PICKYMAN_AGENT_TAG          the tag each must have (default: any tag
//	                                                   of ghcr.io/pickyman/pickyman-operator or -agent)
//	PICKYMAN_REBUILD_DIR                               a second build of the same tree, with
//	                                                   archives of the same names and its own
//	                                                   digests.txt (default ../../bin/images/rebuild)

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/pickyman/pickyman/tools/images/imagebuild"
)

// archive is what one archive must hold.
type archive struct {
	name       string // file name without ".tar"
	path       string
	tag        string // exact tag, or "" for any tag of repo
	repo       string
	entrypoint string
	user       string
	dynamic    bool // needs the ELF interpreter and libraries from the image
	usage      string
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func archives() []archive {
	return []archive{
		{name: "pickyman-operator", path: env("PICKYMAN_OPERATOR_ARCHIVE", "../../bin/images/pickyman-operator.tar"),
			tag: os.Getenv("PICKYMAN_OPERATOR_TAG"), repo: "ghcr.io/pickyman/pickyman-operator",
			entrypoint: "/pickyman-operator", user: "65532:65532", usage: "-webhook-namespace"},
		{name: "pickyman-agent", path: env("PICKYMAN_AGENT_ARCHIVE", "../../bin/images/pickyman-agent.tar"),
			tag: os.Getenv("PICKYMAN_AGENT_TAG"), repo: "ghcr.io/pickyman/pickyman-agent",
			entrypoint: "/pickyman-agent", user: "65532:65532", dynamic: true, usage: "-prepare-socket-dir"},
		{name: "pickyman-testbed-agent", path: env("PICKYMAN_TESTBED_AGENT_ARCHIVE", "../../bin/images/pickyman-testbed-agent.tar"),
			tag: os.Getenv("PICKYMAN_TESTBED_AGENT_TAG"), repo: "ghcr.io/pickyman/pickyman-testbed-agent",
			entrypoint: "/pickyman-testbed-agent", user: "65532:65532", dynamic: true, usage: "-testbed-node-selector"},
	}
}

// file is one path of an image's flattened file system.
type file struct {
	hdr  *tar.Header
	data []byte
}

// flatten returns the image's file system, keyed by clean path without a leading slash.
func flatten(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(path.Clean("/"+h.Name), "/")] = file{h, b}
	}
}

// lookup resolves p in the image as the kernel would, following symbolic links, and returns
// the regular file it names.
func lookup(files map[string]file, p string) (string, file, error) {
	rest := strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	cur := ""
	for links := 0; len(rest) > 0; {
		name := path.Join(cur, rest[0])
		rest = rest[1:]
		f, ok := files[name]
		if !ok {
			return "", file{}, fmt.Errorf("%s: /%s is not in the image", p, name)
		}
		switch f.hdr.Typeflag {
		case tar.TypeSymlink:
			if links++; links > 40 {
				return "", file{}, fmt.Errorf("%s: link loop", p)
			}
			next := f.hdr.Linkname
			if !path.IsAbs(next) {
				next = path.Join("/", cur, next)
			}
			if c := strings.TrimPrefix(path.Clean(next), "/"); c != "" {
				rest = append(strings.Split(c, "/"), rest...)
			}
			cur = ""
		case tar.TypeDir:
			cur = name
		case tar.TypeReg:
			if len(rest) > 0 {
				return "", file{}, fmt.Errorf("%s: /%s is not a directory", p, name)
			}
			return name, f, nil
		default:
			return "", file{}, fmt.Errorf("%s: /%s has type %c", p, name, f.hdr.Typeflag)
		}
	}
	return "", file{}, fmt.Errorf("%s: a directory", p)
}

func readDigests(t *testing.T, p string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || !strings.HasPrefix(f[1], "sha256:") {
			t.Fatalf("%s: line %q: want TAG DIGEST", p, sc.Text())
		}
		out[f[0]] = f[1]
	}
	return out
}

func TestArchives(t *testing.T) {
	for _, a := range archives() {
		t.Run(a.name, func(t *testing.T) {
			if _, err := os.Stat(a.path); err != nil {
				t.Fatalf("archive missing (run make images): %v", err)
			}
			opener := func() (io.ReadCloser, error) { return os.Open(a.path) }
			m, err := tarball.LoadManifest(opener)
			if err != nil {
				t.Fatal(err)
			}
			if len(m) != 1 || len(m[0].RepoTags) != 1 {
				t.Fatalf("manifest.json %+v: want one image with one tag", m)
			}
			tag := m[0].RepoTags[0]
			ref, err := name.NewTag(tag, name.StrictValidation)
			if err != nil {
				t.Fatal(err)
			}
			if a.tag != "" && tag != a.tag {
				t.Errorf("tag %s, want %s", tag, a.tag)
			}
			if ref.Context().Name() != a.repo {
				t.Errorf("repository %s, want %s", ref.Context().Name(), a.repo)
			}
			img, err := tarball.Image(opener, &ref)
			if err != nil {
				t.Fatal(err)
			}
			digest, err := img.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if got := readDigests(t, filepath.Join(filepath.Dir(a.path), "digests.txt"))[tag]; got != digest.String() {
				t.Errorf("digests.txt has %q for %s, the archive %s", got, tag, digest)
			}

			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != "linux" || cf.Architecture != "amd64" || cf.Variant != "" {
				t.Errorf("platform %s/%s%s, want linux/amd64", cf.OS, cf.Architecture, cf.Variant)
			}
			if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != a.entrypoint || len(cf.Config.Cmd) != 0 {
				t.Errorf("entrypoint %q cmd %q, want [%s] and no cmd", cf.Config.Entrypoint, cf.Config.Cmd, a.entrypoint)
			}
			if cf.Config.User != a.user {
				t.Errorf("user %q, want %q", cf.Config.User, a.user)
			}
			uid, gid, _ := strings.Cut(a.user, ":")
			if uid == "0" {
				t.Errorf("user %s is root", a.user)
			}

			checkLayers(t, img, cf)
			files := flatten(t, img)
			for _, p := range []struct {
				path, field string
			}{{"etc/passwd", ":" + uid + ":" + gid + ":"}, {"etc/group", ":" + gid + ":"}} {
				if f, ok := files[p.path]; !ok || !strings.Contains(string(f.data), p.field) {
					t.Errorf("/%s has no entry with %s: %q", p.path, p.field, f.data)
				}
			}
			if f, ok := files["tmp"]; !ok || f.hdr.Typeflag != tar.TypeDir || f.hdr.Mode != 0o1777 {
				t.Errorf("/tmp: want a directory, mode 1777")
			}

			// The entrypoint is the binary that was built, for amd64, with what it needs.
			_, bin, err := lookup(files, a.entrypoint)
			if err != nil {
				t.Fatal(err)
			}
			if bin.hdr.Mode&0o111 != 0o111 {
				t.Errorf("%s: mode %o, not executable by all", a.entrypoint, bin.hdr.Mode)
			}
			built, err := os.ReadFile(strings.TrimSuffix(a.path, ".tar"))
			if err != nil {
				t.Fatalf("the binary the archive was built from: %v", err)
			}
			if sha256.Sum256(built) != sha256.Sum256(bin.data) {
				t.Errorf("%s differs from %s", a.entrypoint, strings.TrimSuffix(a.path, ".tar"))
			}
			checkELF(t, files, a.entrypoint, bin.data, a.dynamic)
			runInImage(t, files, a)
		})
	}
}

// checkLayers checks what makes the image reproducible: every entry of every layer owned by
// 0:0 with no names, dated at the config's created time, and sorted.
func checkLayers(t *testing.T, img v1.Image, cf *v1.ConfigFile) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, h.Name)
			if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(cf.Created.Time) {
				t.Errorf("layer %d: %s: %d:%d %q:%q %v, want 0:0, no names, %v", i, h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, cf.Created.Time)
			}
		}
		rc.Close()
		if !sort.StringsAreSorted(names) {
			t.Errorf("layer %d: entries not sorted: %q", i, names)
		}
	}
	for _, h := range cf.History {
		if !h.Created.Equal(cf.Created.Time) {
			t.Errorf("history %q created %v, want %v", h.CreatedBy, h.Created, cf.Created)
		}
	}
}

// checkELF checks the entrypoint's ELF header, and that the interpreter and every library it
// needs, transitively, are in the image where the loader looks: a static binary needs none.
// libnvidia-ml must not be there: the NVIDIA container runtime mounts the node's.
func checkELF(t *testing.T, files map[string]file, entry string, data []byte, dynamic bool) {
	t.Helper()
	needs := func(name string, b []byte) (string, []string) {
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 {
			t.Errorf("%s: %s %s, want x86-64", name, f.Class, f.Machine)
		}
		var interp string
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				b, _ := io.ReadAll(p.Open())
				interp = strings.TrimRight(string(b), "\x00")
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return interp, libs
	}
	interp, queue := needs(entry, data)
	if !dynamic {
		if interp != "" || len(queue) > 0 {
			t.Errorf("%s: interpreter %q, libraries %q: want a static binary", entry, interp, queue)
		}
		return
	}
	if interp == "" || len(queue) == 0 {
		t.Fatalf("%s: interpreter %q, libraries %q: want a dynamic (cgo) binary", entry, interp, queue)
	}
	if _, _, err := lookup(files, interp); err != nil {
		t.Errorf("interpreter: %v", err)
	}
	seen := map[string]bool{}
	for len(queue) > 0 {
		lib := queue[0]
		queue = queue[1:]
		if seen[lib] {
			continue
		}
		seen[lib] = true
		found := false
		for _, dir := range imagebuild.DefaultLibDirs {
			if real, f, err := lookup(files, path.Join(dir, lib)); err == nil {
				t.Logf("%s: %s/%s (/%s)", lib, dir, lib, real)
				_, more := needs(lib, f.data)
				queue = append(queue, more...)
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s needs %s: not in %s in the image", entry, lib, strings.Join(imagebuild.DefaultLibDirs, ":"))
		}
	}
	for name := range files {
		if strings.Contains(path.Base(name), "libnvidia-ml") {
			t.Errorf("/%s is in the image: the NVIDIA container runtime mounts it", name)
		}
	}
}

// runInImage unpacks the image and runs its entrypoint with -h, chrooted into it as the image's
// user (as root) or as root in a new user namespace (otherwise): the loader, the libraries and
// the Go runtime start, and the flags are printed.
func runInImage(t *testing.T, files map[string]file, a archive) {
	t.Helper()
	dir := t.TempDir()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, p := files[n], filepath.Join(dir, filepath.FromSlash(n))
		var err error
		switch f.hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, fs.FileMode(f.hdr.Mode).Perm())
		case tar.TypeSymlink:
			err = os.Symlink(f.hdr.Linkname, p)
		case tar.TypeReg:
			err = os.WriteFile(p, f.data, fs.FileMode(f.hdr.Mode).Perm())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(a.entrypoint, "-h")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	attr := &syscall.SysProcAttr{Chroot: dir}
	if os.Geteuid() == 0 {
		uid, gid, _ := strings.Cut(a.user, ":")
		u, _ := strconv.Atoi(uid)
		g, _ := strconv.Atoi(gid)
		attr.Credential = &syscall.Credential{Uid: uint32(u), Gid: uint32(g)}
	} else {
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 2) {
		t.Fatalf("chroot %s %s -h: %v\n%s", dir, a.entrypoint, err, out)
	}
	if !strings.Contains(string(out), a.usage) {
		t.Errorf("%s -h in the image printed no %s flag:\n%s", a.entrypoint, a.usage, out)
	}
}

// TestReproducible compares the archives with those of a second build of the same tree: the
// same bytes, so the same digests.
func TestReproducible(t *testing.T) {
	rebuild := env("PICKYMAN_REBUILD_DIR", "../../bin/images/rebuild")
	var first, second map[string]string
	for _, a := range archives() {
		again := filepath.Join(rebuild, filepath.Base(a.path))
		sums := [2][32]byte{}
		for i, p := range []string{a.path, again} {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%v (run make test-images)", err)
			}
			sums[i] = sha256.Sum256(b)
		}
		if sums[0] != sums[1] {
			t.Errorf("%s and %s differ", a.path, again)
		}
		if first == nil {
			first = readDigests(t, filepath.Join(filepath.Dir(a.path), "digests.txt"))
			second = readDigests(t, filepath.Join(rebuild, "digests.txt"))
		}
	}
	if fmt.Sprint(first) != fmt.Sprint(second) || len(first) != len(archives()) {
		t.Errorf("digests differ:\n%v\n%v", first, second)
	}
	for tag, d := range first {
		t.Logf("%s %s", tag, d)
	}
}
