package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

func TestMain(m *testing.M) { proctest.Main(m) }

// Paths and names the deployment files share, as the Dockerfile sets them up.
const (
	binPath   = "/usr/local/bin/lockstep"
	dataMount = "/var/lib/lockstep"
	image     = "lockstep:dev"
)

// repoRoot is the module's root directory (the test runs in tests/packaging).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}

// readFile reads a file of the repository.
func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// flagName matches a long flag in a command's help.
var flagName = regexp.MustCompile(`(?m)^\s+--([a-z0-9][a-z0-9-]*)`)

// helpFlags returns the long flags the --help of the lockstep command path (as
// "cluster", "status") lists.
func helpFlags(t *testing.T, bin string, path []string) map[string]bool {
	t.Helper()
	out, err := exec.Command(bin, append(append([]string{}, path...), "--help")...).CombinedOutput()
	if err != nil {
		t.Fatalf("lockstep %s --help: %v\n%s", strings.Join(path, " "), err, out)
	}
	flags := map[string]bool{}
	for _, m := range flagName.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) == 0 {
		t.Fatalf("lockstep %s --help lists no flags:\n%s", strings.Join(path, " "), out)
	}
	return flags
}

// checkFlags checks that args, a lockstep command line without the binary, names a
// command and uses only flags its --help lists; what says where args come from.
func checkFlags(t *testing.T, bin, what string, args []string) {
	t.Helper()
	var path []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		path = append(path, a)
	}
	if len(path) == 0 {
		t.Errorf("%s: %q names no lockstep command", what, args)
		return
	}
	known := helpFlags(t, bin, path)
	for _, a := range args[len(path):] {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if !known[name] {
			t.Errorf("%s: lockstep %s has no flag --%s", what, strings.Join(path, " "), name)
		}
	}
}

// checkConfig runs `lockstep node ARGS --check-config` and returns its output; the
// command must exit 0.
func checkConfig(t *testing.T, bin, what string, args []string) string {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{}, args...), "--check-config")...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "configuration valid") {
		t.Errorf("%s: lockstep %s --check-config: %v\n%s", what, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// flagValue returns the value of --name in args (as "--name v" or "--name=v").
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// cleanEnv is the test's environment without LOCKSTEP_CERTS_DIR, which would stand in for
// a --certs-dir the files give (or leave to a config file).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOCKSTEP_CERTS_DIR=") {
			env = append(env, kv)
		}
	}
	return env
}
