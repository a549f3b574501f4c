package imagebuild

import (
	"debug/elf"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Base names the file tree under the binary.
type Base string

const (
	// Scratch is for static binaries: /etc/passwd, /etc/group and /tmp, nothing else.
	Scratch Base = "scratch"
	// Glibc adds to Scratch's files the ELF interpreter and the shared libraries that the
	// binary needs, copied from the host, and an /etc/nsswitch.conf for glibc.
	Glibc Base = "glibc"
)

// Spec describes one image.
type Spec struct {
	Binary     string    // host path of the entrypoint binary
	Entrypoint string    // its path in the image; "/" + the binary's file name if empty
	Base       Base      // Scratch or Glibc
	User       string    // "uid:gid" the image runs as, and that /etc/passwd and /etc/group name
	Epoch      time.Time // every file's mtime and the config's created time
	HostRoot   string    // host directory the glibc files come from; "/" if empty
	LibDirs    []string  // loader search path; DefaultLibDirs if empty
}

// Result is a built image and the host files it copied for its base.
type Result struct {
	Image v1.Image
	// Copied lists the base's files copied from the host, as image paths ("usr/lib/...").
	Copied []string
}

// platforms maps the ELF machines we build for to the image architecture.
var platforms = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}

// Build assembles the image: one layer with the base, one with the binary, and a config that
// holds nothing but the entrypoint, user, platform, PATH and the fixed time.
func Build(s Spec) (Result, error) {
	uid, gid, err := parseUser(s.User)
	if err != nil {
		return Result{}, err
	}
	interp, _, machine, err := ELFNeeds(s.Binary)
	if err != nil {
		return Result{}, err
	}
	arch, ok := platforms[machine]
	if !ok {
		return Result{}, fmt.Errorf("%s: ELF machine %s is not supported", s.Binary, machine)
	}
	if s.Entrypoint == "" {
		s.Entrypoint = "/" + filepath.Base(s.Binary)
	}
	if !path.IsAbs(s.Entrypoint) {
		return Result{}, fmt.Errorf("entrypoint %q: not an absolute path", s.Entrypoint)
	}
	if s.HostRoot == "" {
		s.HostRoot = "/"
	}
	if len(s.LibDirs) == 0 {
		s.LibDirs = DefaultLibDirs
	}

	base := NewTree()
	if err := addUsers(base, uid, gid); err != nil {
		return Result{}, err
	}
	if err := base.Dir("tmp", 0o777|os.ModeSticky); err != nil {
		return Result{}, err
	}
	var copied []string
	switch s.Base {
	case Scratch:
		if interp != "" {
			return Result{}, fmt.Errorf("%s: dynamic binary (interpreter %s) on the scratch base; use --base glibc", s.Binary, interp)
		}
	case Glibc:
		if err := base.File("etc/nsswitch.conf", 0o644, []byte(nsswitch)); err != nil {
			return Result{}, err
		}
		if copied, err = CopyELFDeps(base, s.HostRoot, s.Binary, s.LibDirs); err != nil {
			return Result{}, err
		}
	default:
		return Result{}, fmt.Errorf("base %q: want %s or %s", s.Base, Scratch, Glibc)
	}

	data, err := os.ReadFile(s.Binary)
	if err != nil {
		return Result{}, err
	}
	app := NewTree()
	if err := app.File(s.Entrypoint, 0o755, data); err != nil {
		return Result{}, err
	}

	created := v1.Time{Time: s.Epoch.UTC().Truncate(time.Second)}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		Created:      created,
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: []string{s.Entrypoint},
			User:       s.User,
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			WorkingDir: "/",
		},
	})
	if err != nil {
		return Result{}, err
	}
	for _, l := range []struct {
		tree *Tree
		by   string
	}{
		{base, fmt.Sprintf("pickyman images: base %s, user %s", s.Base, s.User)},
		{app, "pickyman images: " + s.Entrypoint},
	} {
		layer, err := l.tree.Layer(created.Time)
		if err != nil {
			return Result{}, err
		}
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: created, CreatedBy: l.by}})
		if err != nil {
			return Result{}, err
		}
	}
	return Result{Image: img, Copied: copied}, nil
}

// Write writes img as a `docker save` archive at p with tag as its only RepoTag. The file is
// replaced only once it is complete.
func Write(p, tag string, img v1.Image) error {
	ref, err := name.NewTag(tag, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}
	tmp := p + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, p)
}

// parseUser parses "uid:gid" (numbers only: the image has no name service to look names up).
func parseUser(u string) (uid, gid int, err error) {
	us, gs, ok := strings.Cut(u, ":")
	if ok {
		uid, err = strconv.Atoi(us)
		if err == nil {
			gid, err = strconv.Atoi(gs)
		}
	}
	if !ok || err != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("user %q: want uid:gid, two numbers", u)
	}
	return uid, gid, nil
}

// addUsers writes /etc/passwd and /etc/group: root, and "nonroot" for uid and gid when they
// are not 0 (the names distroless uses for 65532).
func addUsers(t *Tree, uid, gid int) error {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n"
	group := "root:x:0:\n"
	if uid != 0 {
		passwd += fmt.Sprintf("nonroot:x:%d:%d:nonroot:/nonexistent:/sbin/nologin\n", uid, gid)
	}
	if gid != 0 {
		group += fmt.Sprintf("nonroot:x:%d:\n", gid)
	}
	if err := t.File("etc/passwd", 0o644, []byte(passwd)); err != nil {
		return err
	}
	return t.File("etc/group", 0o644, []byte(group))
}

// nsswitch makes glibc read users, groups and hosts from /etc (and DNS), with no NSS modules
// beyond what libc.so.6 holds.
const nsswitch = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
