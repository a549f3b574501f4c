package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what `pickyman version` prints, read from the build information the Go
// toolchain embeds in the binary.
type versionInfo struct {
	// Module is the main module's path and Version its version: a tag or pseudo-version when
	// built with go install module@version, "(devel)" when built from a working tree.
	Module  string `json:"module"`
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from, Modified whether the working
	// tree had changes, CommitTime the commit's time; all empty when the toolchain recorded
	// no VCS information (go run, go test, -buildvcs=false, or no repository).
	Revision   string `json:"revision,omitempty"`
	Modified   bool   `json:"modified"`
	CommitTime string `json:"commit_time,omitempty"`
	// GoVersion is the toolchain that built the binary; Platform its GOOS/GOARCH.
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// readVersion reads the binary's build information.
func readVersion() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionFrom(bi)
}

// versionFrom is the version that bi records; nil for a binary without build information.
func versionFrom(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return v
	}
	v.Module = bi.Main.Path
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "vcs.time":
			v.CommitTime = s.Value
		}
	}
	return v
}

// line is the version on one line, for --version.
func (v versionInfo) line() string {
	s := v.Version
	switch {
	case v.Revision != "" && v.Modified:
		s += " (" + v.Revision + ", modified)"
	case v.Revision != "":
		s += " (" + v.Revision + ")"
	}
	return s + " " + v.GoVersion
}

// write prints the version as a few lines of text.
func (v versionInfo) write(w io.Writer) {
	module := v.Module
	if module == "" {
		module = "pickyman"
	}
	fmt.Fprintf(w, "%s %s\n", module, v.Version)
	switch {
	case v.Revision == "":
		fmt.Fprintln(w, "revision    unknown (built without VCS information)")
	case v.Modified:
		fmt.Fprintf(w, "revision    %s (modified working tree)\n", v.Revision)
	default:
		fmt.Fprintf(w, "revision    %s\n", v.Revision)
	}
	if v.CommitTime != "" {
		fmt.Fprintf(w, "commit time %s\n", v.CommitTime)
	}
	fmt.Fprintf(w, "go          %s %s\n", v.GoVersion, v.Platform)
}

// newVersionCommand returns `pickyman version`.
func newVersionCommand() *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print pickyman's version, VCS revision and Go version",
		Long: "Print the module version, the VCS revision the binary was built from (and whether the\n" +
			"working tree was modified), the commit's time and the Go version, as the Go toolchain\n" +
			"recorded them in the binary. The toolchain records no build time; the commit time is the\n" +
			"closest it knows. A binary from go run or go test has no VCS information.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			v := readVersion()
			if out.json() {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			v.write(cmd.OutOrStdout())
			return nil
		},
	}
	out.register(cmd)
	return cmd
}
