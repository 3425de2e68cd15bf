package proctest

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

const (
	// CommandTimeout bounds one run of an admin command.
	CommandTimeout = 60 * time.Second
	// ReadyTimeout bounds waiting for started nodes to become ready.
	ReadyTimeout = 30 * time.Second
	// PollPause is the pause between polls of a condition with a deadline.
	PollPause = 20 * time.Millisecond
)

// Env is the environment of the processes started: a race-enabled binary would
// otherwise pause a second at exit, and nodes and commands use the shared test
// certificates (testutil.CertsDir) unless given --certs-dir or --insecure.
func Env() []string {
	return append(os.Environ(), "GORACE=atexit_sleep_ms=0", testutil.CertsDirEnv+"="+SharedCerts())
}

// SharedCerts is the shared test certificates' directory.
func SharedCerts() string {
	dir, err := testutil.SharedCertsDir()
	if err != nil {
		panic(fmt.Sprintf("test certificates: %v", err))
	}
	return dir
}

// TLS returns client root's TLS configuration of the shared test certificates that Env
// gives the processes.
func TLS() *tls.Config { return TLSOf(SharedCerts()) }

// TLSOf returns client root's TLS configuration of the certificates in dir.
func TLSOf(dir string) *tls.Config {
	cfg, err := client.LoadTLS(dir, "root")
	if err != nil {
		panic(fmt.Sprintf("test certificates: %v", err))
	}
	return cfg
}

// Result is what one run of the binary did.
type Result struct {
	// Stdout and Stderr are its output.
	Stdout, Stderr string
	// Code is its exit code.
	Code int
	// Took is how long it ran.
	Took time.Duration
}

// String shows the exit code, the time taken and the output, for a failure's message.
func (r Result) String() string {
	return fmt.Sprintf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", r.Code, r.Took, r.Stdout, r.Stderr)
}

// Run runs the binary with args and waits for it, at most CommandTimeout.
func Run(t testing.TB, bin string, args ...string) Result {
	t.Helper()
	return RunWithin(t, CommandTimeout, bin, args...)
}

// RunWithin is Run for a command that may take longer: it is killed after timeout.
func RunWithin(t testing.TB, timeout time.Duration, bin string, args ...string) Result {
	t.Helper()
	return run(t, timeout, nil, bin, args...)
}

// RunInput is Run with stdin as the command's standard input.
func RunInput(t testing.TB, bin, stdin string, args ...string) Result {
	t.Helper()
	return run(t, CommandTimeout, strings.NewReader(stdin), bin, args...)
}

// run runs bin with args and stdin (nil: none), killed after timeout, and fails t if it
// could not run at all.
func run(t testing.TB, timeout time.Duration, stdin io.Reader, bin string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = Env()
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String(), Took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

// MustRun runs the binary and fails the test unless it exits 0.
func MustRun(t testing.TB, bin string, args ...string) Result {
	t.Helper()
	r := Run(t, bin, args...)
	if r.Code != 0 {
		t.Fatalf("lockstep %s: %v", strings.Join(args, " "), r)
	}
	return r
}

// CheckFailure checks that r failed the way every command must: a non-zero exit and one
// line on stderr, "lockstep: ..." containing want.
func CheckFailure(t testing.TB, r Result, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	if r.Code == 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "lockstep: ") || !strings.Contains(lines[0], want) {
		t.Fatalf("want a non-zero exit and one stderr line with %q; got %v", want, r)
	}
}
