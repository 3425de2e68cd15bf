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

// BuildUpgradeApp builds examples/upgradeapp's builds A and B at once (with -race when the
// tests run with it): old is build A (tag lockstep_upgrade_old), new build B. Both are in
// a temp dir of the test.
func BuildUpgradeApp(t testing.TB) (old, new string) {
	t.Helper()
	exes := buildUpgradeApps(t, "lockstep_upgrade_old", "")
	return exes[0], exes[1]
}

// BuildUpgradeAppNext builds examples/upgradeapp's builds B and C at once (with -race
// when the tests run with it): new is build B (the default), next build C (tag
// lockstep_upgrade_next: B and the processor plays.count@1 with plays.get@1). Both are in
// a temp dir of the test.
func BuildUpgradeAppNext(t testing.TB) (new, next string) {
	t.Helper()
	exes := buildUpgradeApps(t, "", "lockstep_upgrade_next")
	return exes[0], exes[1]
}

// buildUpgradeApps builds examples/upgradeapp once per tag ("" for the default build), in
// parallel, each into a temp dir of the test, and returns the binaries in tags' order.
func buildUpgradeApps(t testing.TB, tags ...string) []string {
	t.Helper()
	exes := make([]string, len(tags))
	errs := make([]error, len(tags))
	var wg sync.WaitGroup
	for i, tag := range tags {
		dir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ts []string
			if tag != "" {
				ts = []string{tag}
			}
			exes[i], errs[i] = buildProgram(dir, "upgradeapp", ts...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return exes
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
