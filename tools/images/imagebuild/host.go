package imagebuild

import (
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// DefaultLibDirs is the dynamic loader's system search path on Debian amd64 (`ld.so --help`),
// which is also where the loader in the image looks, as the image has no /etc/ld.so.cache.
var DefaultLibDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"}

// maxLinks bounds the symbolic links followed for one path, as the kernel's ELOOP does.
const maxLinks = 40

// step is one directory or symbolic link met while resolving a path.
type step struct {
	name string // entry name, no leading slash
	link string // the link's target; empty for a directory
}

// resolve follows p (absolute, in the host tree under root) to the regular file it names, as
// the kernel would with root as "/": it returns every directory and symbolic link met on the
// way, in order, and the name of that file.
func resolve(root, p string) (steps []step, file string, err error) {
	rest := strings.Split(clean(p), "/")
	cur, links := "", 0
	for len(rest) > 0 {
		name := path.Join(cur, rest[0])
		rest = rest[1:]
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			return nil, "", err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if links++; links > maxLinks {
				return nil, "", fmt.Errorf("%s: too many levels of symbolic links", p)
			}
			target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(name)))
			if err != nil {
				return nil, "", err
			}
			steps = append(steps, step{name: name, link: target})
			next := target
			if !path.IsAbs(target) {
				next = path.Join("/", cur, target) // cur is already free of links
			}
			if c := clean(next); c != "" {
				rest = append(strings.Split(c, "/"), rest...)
			}
			cur = ""
		case fi.IsDir():
			steps = append(steps, step{name: name})
			cur = name
		case fi.Mode().IsRegular():
			if len(rest) > 0 {
				return nil, "", fmt.Errorf("%s: %s is not a directory", p, name)
			}
			return steps, name, nil
		default:
			return nil, "", fmt.Errorf("%s: %s is not a regular file, directory or link", p, name)
		}
	}
	return nil, "", fmt.Errorf("%s: is a directory", p)
}

// CopyPath adds the host file p (an absolute path, in the tree under root) to t under the same
// name, with every symbolic link met on the way (in a directory or at the end) added as the
// same link, so that the image reaches the file by each of those names, as the host does.
// Directories get mode 0755; the file keeps its permission bits. It returns the name of the
// regular file that p resolves to.
func CopyPath(t *Tree, root, p string) (string, error) {
	steps, file, err := resolve(root, p)
	if err != nil {
		return "", err
	}
	for _, s := range steps {
		if s.link != "" {
			err = t.Symlink(s.name, s.link)
		} else {
			err = t.Dir(s.name, 0o755)
		}
		if err != nil {
			return "", err
		}
	}
	host := filepath.Join(root, filepath.FromSlash(file))
	fi, err := os.Stat(host)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(host)
	if err != nil {
		return "", err
	}
	return file, t.File(file, fi.Mode().Perm(), data)
}

// ELFNeeds returns what the ELF file at p needs from the dynamic loader: its interpreter
// (PT_INTERP; empty for a static binary) and its DT_NEEDED library names, with its machine.
func ELFNeeds(p string) (interp string, needed []string, machine elf.Machine, err error) {
	f, err := elf.Open(p)
	if err != nil {
		return "", nil, 0, fmt.Errorf("%s: reading it as ELF: %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return "", nil, 0, fmt.Errorf("%s: PT_INTERP: %w", p, err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	needed, err = f.ImportedLibraries()
	if err != nil {
		return "", nil, 0, fmt.Errorf("%s: DT_NEEDED: %w", p, err)
	}
	return interp, needed, f.Machine, nil
}

// CopyELFDeps adds to t what the dynamic ELF binary (a host path) needs to start, copied
// from the host tree under root: its interpreter and every DT_NEEDED library, transitively,
// each found as the loader finds it, in the first of libDirs that holds an ELF file of the
// binary's machine under that name. It returns the names of the regular files copied. A
// static binary needs nothing.
func CopyELFDeps(t *Tree, root, binary string, libDirs []string) ([]string, error) {
	interp, needed, machine, err := ELFNeeds(binary)
	if err != nil {
		return nil, err
	}
	if interp == "" {
		if len(needed) > 0 {
			return nil, fmt.Errorf("%s: DT_NEEDED %v without an interpreter", binary, needed)
		}
		return nil, nil
	}
	var copied []string
	seen := map[string]bool{}
	add := func(p string) (string, error) {
		file, err := CopyPath(t, root, p)
		if err == nil && !seen[file] {
			seen[file] = true
			copied = append(copied, file)
		}
		return file, err
	}
	if _, err := add(interp); err != nil {
		return nil, fmt.Errorf("interpreter %s: %w", interp, err)
	}
	queue, done := needed, map[string]bool{}
	for len(queue) > 0 {
		lib := queue[0]
		queue = queue[1:]
		if done[lib] {
			continue
		}
		done[lib] = true
		p, err := findLib(root, lib, libDirs, machine)
		if err != nil {
			return nil, err
		}
		file, err := add(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", lib, err)
		}
		_, more, _, err := ELFNeeds(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, err
		}
		queue = append(queue, more...)
	}
	return copied, nil
}

// findLib returns the path, in the first of dirs that has one, of an ELF file named lib
// for machine.
func findLib(root, lib string, dirs []string, machine elf.Machine) (string, error) {
	if strings.Contains(lib, "/") {
		return "", fmt.Errorf("DT_NEEDED %q: a path, not a library name", lib)
	}
	for _, dir := range dirs {
		p := path.Join(dir, lib)
		_, file, err := resolve(root, p)
		if err != nil {
			continue
		}
		if _, _, m, err := ELFNeeds(filepath.Join(root, filepath.FromSlash(file))); err == nil && m == machine {
			return p, nil
		}
	}
	return "", fmt.Errorf("library %s (%s) not found in %s under %s", lib, machine, strings.Join(dirs, ":"), root)
}
