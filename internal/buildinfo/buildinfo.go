// Package buildinfo reports the version of the running binary, from the build
// information the Go toolchain embeds (runtime/debug.ReadBuildInfo). A node reports it in
// its status; `lockstep --version` prints it.
package buildinfo

import (
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
