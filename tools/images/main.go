// Command pickyman-images writes a container image for one binary as a `docker save`
// archive, with no container engine and no registry, reproducibly: the same binary and flags
// give the same image digest. mk/images.mk runs it for the operator and the agent; the image
// is built by package imagebuild. It prints "TAG DIGEST" (the manifest digest) on stdout.
//
//	pickyman-images --binary bin/images/pickyman-agent --base glibc --user 65532:65532 \
//	  --tag ghcr.io/pickyman/pickyman-agent:dev --epoch 0 --out bin/images/pickyman-agent.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pickyman/pickyman/tools/images/imagebuild"
)

func main() {
	var s imagebuild.Spec
	var base, out, tag, libDirs string
	var epoch int64
	flag.StringVar(&s.Binary, "binary", "", "the entrypoint binary (required)")
	flag.StringVar(&s.Entrypoint, "entrypoint", "", `its path in the image (default "/" + its file name)`)
	flag.StringVar(&base, "base", string(imagebuild.Scratch), "base: scratch (static binaries) or glibc (interpreter and libraries from the host)")
	flag.StringVar(&s.User, "user", "65532:65532", "uid:gid the image runs as")
	flag.StringVar(&tag, "tag", "", "the archive's RepoTag, e.g. ghcr.io/pickyman/pickyman-operator:v1 (required)")
	flag.StringVar(&out, "out", "", "the archive to write (required)")
	flag.Int64Var(&epoch, "epoch", 0, "seconds since 1970 for every mtime and the created time (SOURCE_DATE_EPOCH)")
	flag.StringVar(&s.HostRoot, "host-root", "/", "host directory the glibc base's files are copied from")
	flag.StringVar(&libDirs, "lib-dirs", strings.Join(imagebuild.DefaultLibDirs, ":"), "loader search path for DT_NEEDED libraries, ':'-separated")
	flag.Parse()
	if s.Binary == "" || tag == "" || out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "pickyman-images: --binary, --tag and --out are required; no arguments")
		flag.Usage()
		os.Exit(2)
	}
	s.Base = imagebuild.Base(base)
	s.Epoch = time.Unix(epoch, 0)
	s.LibDirs = strings.Split(libDirs, ":")
	if err := run(s, tag, out); err != nil {
		fmt.Fprintln(os.Stderr, "pickyman-images:", err)
		os.Exit(1)
	}
}

func run(s imagebuild.Spec, tag, out string) error {
	r, err := imagebuild.Build(s)
	if err != nil {
		return err
	}
	for _, f := range r.Copied {
		fmt.Fprintf(os.Stderr, "pickyman-images: %s: copied /%s from the host\n", tag, f)
	}
	if err := imagebuild.Write(out, tag, r.Image); err != nil {
		return err
	}
	digest, err := r.Image.Digest()
	if err != nil {
		return err
	}
	id, err := r.Image.ConfigName()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "pickyman-images: wrote %s (image ID %s)\n", out, id)
	fmt.Printf("%s %s\n", tag, digest)
	return nil
}
