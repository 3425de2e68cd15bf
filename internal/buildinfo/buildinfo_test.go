package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-compiler", Value: "gc"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123abcd"},
		{Key: "vcs.time", Value: "2025-01-02T03:04:05Z"},
	}
	modified := append(append([]debug.BuildSetting{}, vcs...), debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	clean := append(append([]debug.BuildSetting{}, vcs...), debug.BuildSetting{Key: "vcs.modified", Value: "false"})
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "unknown"},
		{"tagged module", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: modified}, true, "v1.2.3"},
		{"devel, no vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "(devel)"},
		{"devel, empty version", &debug.BuildInfo{}, true, "(devel)"},
		{"devel, clean checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: clean}, true,
			"(devel) 0123abcd 2025-01-02T03:04:05Z"},
		{"devel, modified checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: modified}, true,
			"(devel) 0123abcd 2025-01-02T03:04:05Z +modified"},
	}
	for _, tt := range tests {
		if got := fromBuildInfo(tt.bi, tt.ok); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestVersion checks the running test binary's version: it has build information (the
// main module's version is empty or "(devel)" under go test), and Version is stable.
func TestVersion(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build information")
	}
	if got, want := Version(), fromBuildInfo(bi, ok); got != want || got == "" || got == "unknown" {
		t.Fatalf("Version() = %q, want %q", got, want)
	}
	if Version() != Version() {
		t.Fatal("Version is not stable")
	}
}

func TestTargetOf(t *testing.T) {
	settings := []debug.BuildSetting{
		{Key: "GOARCH", Value: "amd64"}, {Key: "GOOS", Value: "linux"}, {Key: "GOAMD64", Value: "v3"},
		{Key: "GOARM64", Value: "v8.0"},
	}
	tests := []struct {
		goarch   string
		settings []debug.BuildSetting
		want     string
	}{
		{"amd64", settings, "go1.26.8 amd64 GOAMD64=v3"},
		{"arm64", settings, "go1.26.8 arm64 GOARM64=v8.0"},
		{"riscv64", settings, "go1.26.8 riscv64"},
		{"amd64", nil, "go1.26.8 amd64"},
	}
	for i, tt := range tests {
		if got := targetOf("go1.26.8", tt.goarch, tt.settings); got != tt.want {
			t.Errorf("#%d: got %q, want %q", i, got, tt.want)
		}
	}
	if got := Target(); !strings.HasPrefix(got, runtime.Version()+" "+runtime.GOARCH) {
		t.Errorf("Target() = %q, want it to start with %s %s", got, runtime.Version(), runtime.GOARCH)
	}
}

func TestRevisionOf(t *testing.T) {
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "0123abcd"}
	for i, tc := range []struct {
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{nil, false, ""},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true, ""},
		{&debug.BuildInfo{Settings: []debug.BuildSetting{rev}}, true, "0123abcd"},
		{&debug.BuildInfo{Settings: []debug.BuildSetting{rev, {Key: "vcs.modified", Value: "false"}}}, true, "0123abcd"},
		{&debug.BuildInfo{Settings: []debug.BuildSetting{rev, {Key: "vcs.modified", Value: "true"}}}, true, "0123abcd+modified"},
	} {
		if got := revisionOf(tc.bi, tc.ok); got != tc.want {
			t.Errorf("#%d: got %q, want %q", i, got, tc.want)
		}
	}
}
