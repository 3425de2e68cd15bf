package proctest

import (
	"errors"
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
	exe, err := buildProgram(t.TempDir(), "customproc", tags...)
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// BuildUpgradeApp builds examples/upgradeapp's two builds at once (with -race when the
// tests run with it): old is build A (tag lockstep_upgrade_old), new build B. Both are in
// a temp dir of the test.
func BuildUpgradeApp(t testing.TB) (old, new string) {
	t.Helper()
	var errA, errB error
	var wg sync.WaitGroup
	dirA, dirB := t.TempDir(), t.TempDir()
	wg.Add(1)
	go func() {
		defer wg.Done()
		old, errA = buildProgram(dirA, "upgradeapp", "lockstep_upgrade_old")
	}()
	new, errB = buildProgram(dirB, "upgradeapp")
	wg.Wait()
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	return old, new
}

// buildProgram builds examples/NAME with tags into dir, with -race when the tests run with
// it, and returns the binary's path.
func buildProgram(dir, name string, tags ...string) (string, error) {
	exe := filepath.Join(dir, name)
	args := []string{"build", "-o", exe}
	if RaceBuild {
		args = append(args, "-race")
	}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if out, err := exec.Command("go", append(args, "github.com/lockstepdb/lockstep/examples/"+name)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s %v: %v\n%s", name, tags, err, out)
	}
	return exe, nil
}
