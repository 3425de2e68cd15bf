package jepsen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// testBin is the lockstep binary the tests run, built once by TestMain.
var testBin string

// buildLockstep builds the lockstep command into dir, with the build tags given.
func buildLockstep(dir string, tags ...string) (string, error) {
	bin := filepath.Join(dir, "lockstep")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", tags[0])
	}
	out, err := exec.Command("go", append(args, "../cmd/lockstep")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jepsen-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testBin, err = buildLockstep(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
