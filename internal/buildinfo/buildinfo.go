// Package buildinfo reports the version of the running binary, from the build
// information the Go toolchain embeds (runtime/debug.ReadBuildInfo). A node reports it in
// its status; `lockstep --version` prints it. Target is what must match across a cluster
// for float results to agree (docs/procedures.md, Floats). Revision is the VCS revision
// alone, which the lockstep_build_info metric reports.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Version returns the binary's version: the main module's version when it was built from
// a tagged module (go install module@v1.2.3); otherwise "(devel)", followed by the VCS
// revision, its commit time and "+modified" when the work tree had uncommitted changes, as
// far as the build recorded them (go build in a git checkout does; go test does not). It
// returns "unknown" if the binary carries no build information.
func Version() string {
	versionOnce.Do(func() { version = fromBuildInfo(debug.ReadBuildInfo()) })
	return version
}

var (
	versionOnce sync.Once
	version     string
)

// fromBuildInfo formats the version that bi describes; ok is ReadBuildInfo's.
func fromBuildInfo(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "unknown"
	}
	v := bi.Main.Version
	if v != "" && v != "(devel)" {
		return v
	}
	v = "(devel)"
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	parts := []string{v}
	if rev != "" {
		parts = append(parts, rev)
	}
	if at != "" {
		parts = append(parts, at)
	}
	if modified == "true" {
		parts = append(parts, "+modified")
	}
	return strings.Join(parts, " ")
}

// Target returns the build target of the running binary as far as it decides float
// results: the Go version, GOARCH and GOARCH's instruction-set level (GOAMD64 for amd64,
// GOARM64 for arm64, GO386, GOARM, ...), e.g. "go1.26.8 amd64 GOAMD64=v1". The compiler
// fuses x*y + z into one FMA instruction, rounding once instead of twice, where the
// target has FMA (arm64, ppc64, s390x, riscv64 always; amd64 from GOAMD64=v3), and a new
// Go version may change the math library or what it fuses: two binaries of different
// targets may compute different float state from the same log. Every node of a cluster
// must run the same Target (docs/procedures.md, Floats); a join checks it.
func Target() string {
	targetOnce.Do(func() {
		bi, ok := debug.ReadBuildInfo()
		var settings []debug.BuildSetting
		if ok && bi != nil {
			settings = bi.Settings
		}
		target = targetOf(runtime.Version(), runtime.GOARCH, settings)
	})
	return target
}

var (
	targetOnce sync.Once
	target     string
)

// targetOf formats the build target of a binary built by goVersion for goarch with the
// given build settings (Target).
func targetOf(goVersion, goarch string, settings []debug.BuildSetting) string {
	level := "GO" + strings.ToUpper(goarch) // GOAMD64, GOARM64, GO386, GOARM, GOPPC64, ...
	parts := []string{goVersion, goarch}
	for _, s := range settings {
		if s.Key == level && s.Value != "" {
			parts = append(parts, level+"="+s.Value)
		}
	}
	return strings.Join(parts, " ")
}

// Revision returns the VCS revision the binary was built from, as the build recorded it
// (go build in a git checkout does; go test and go install module@version do not), with
// "+modified" when the work tree had uncommitted changes; "" when none was recorded.
func Revision() string {
	revisionOnce.Do(func() { revision = revisionOf(debug.ReadBuildInfo()) })
	return revision
}

var (
	revisionOnce sync.Once
	revision     string
)

// revisionOf is Revision for the build information bi; ok is ReadBuildInfo's.
func revisionOf(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return ""
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "+modified"
	}
	return rev
}
