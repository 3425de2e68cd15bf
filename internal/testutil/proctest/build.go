package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lockstepdb/lockstep/jepsen"
)

var (
	binMu    sync.Mutex
	binaries = map[string]string{} // built binaries, by build tags
	binDir   string                // holds them; removed by Main
)

// Main runs the tests of m, removes the binaries BuildBinary built and exits with the
// tests' code: a test package using BuildBinary calls it from its TestMain.
func Main(m *testing.M) {
	code := m.Run()
	binMu.Lock()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	binMu.Unlock()
	os.Exit(code)
}

// BuildBinary returns the lockstep command built with the build tags given
// (lockstep_nondet: a test procedure that breaks determinism), building it on first use.
// When the tests run with -race, so does the binary (its packages are compiled for it
// already).
func BuildBinary(t testing.TB, tags ...string) string {
	t.Helper()
	key := strings.Join(tags, ",")
	binMu.Lock()
	defer binMu.Unlock()
	if bin, ok := binaries[key]; ok {
		return bin
	}
	if binDir == "" {
		dir, err := os.MkdirTemp("", "lockstep-system-bin-")
		if err != nil {
			t.Fatal(err)
		}
		binDir = dir
	}
	dir := filepath.Join(binDir, fmt.Sprint(len(binaries)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := jepsen.BuildLockstep(dir, RaceBuild, tags...)
	if err != nil {
		t.Fatal(err)
	}
	binaries[key] = bin
	return bin
}

// BuildCustomProc builds examples/customproc with the build tags given, with -race when
// the tests run with it, and returns the binary's path (in a temp dir of the test).
func BuildCustomProc(t testing.TB, tags ...string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "customproc")
	args := []string{"build", "-o", exe}
	if RaceBuild {
		args = append(args, "-race")
	}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if out, err := exec.Command("go", append(args, "github.com/lockstepdb/lockstep/examples/customproc")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}
