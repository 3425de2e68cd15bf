package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/certs"
)

// Helpers for tests and benchmarks that run real `lockstep node` processes on loopback
// (cmd/lockstep's CLI tests, the benchmarks users compare).

// ErrPortTaken is returned by WaitReady when the process exited because an address it was
// given was in use: another process took a port between FreeAddrs and the bind. Callers
// start again on new ports.
var ErrPortTaken = errors.New("a port was taken")

// FreeAddrs returns n loopback addresses whose ports were free a moment ago.
func FreeAddrs(tb testing.TB, n int) []string {
	tb.Helper()
	lns := make([]net.Listener, 0, n)
	out := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// Proc is a child process whose output goes to a log file. Its owner ends it (Kill, Stop).
type Proc struct {
	// Cmd is the running command.
	Cmd *exec.Cmd
	// LogPath is the file holding its stdout and stderr.
	LogPath string
	// Exited is closed once the process has exited and been waited for.
	Exited chan struct{}
	// CertsDir is the certificates directory the process was given (see certsFor): its
	// admin port speaks HTTPS with them. Empty for an insecure process.
	CertsDir string
}

// StartProc starts bin with args and env (nil: this process's), its output going to a new
// file at logPath. Unless args hold --certs-dir or --insecure, or env sets
// LOCKSTEP_CERTS_DIR, the process gets the shared test certificates (CertsDir) through
// LOCKSTEP_CERTS_DIR: a `lockstep node` runs secure, a CLI command connects with them.
func StartProc(logPath string, env []string, bin string, args ...string) (*Proc, error) {
	dir, env, err := certsFor(env, args)
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &Proc{Cmd: exec.Command(bin, args...), LogPath: logPath, Exited: make(chan struct{}), CertsDir: dir}
	p.Cmd.Env = env
	p.Cmd.Stdout, p.Cmd.Stderr = logf, logf
	if err := p.Cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		p.Cmd.Wait()
		logf.Close()
		close(p.Exited)
	}()
	return p, nil
}

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.Exited:
		return false
	default:
		return true
	}
}

// Kill stops the process at once (SIGKILL) and waits for it.
func (p *Proc) Kill() {
	if p.Running() {
		p.Cmd.Process.Kill()
	}
	<-p.Exited
}

// Stop sends SIGTERM and waits up to grace for a clean exit, then kills the process.
func (p *Proc) Stop(grace time.Duration) {
	if !p.Running() {
		return
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Exited:
	case <-time.After(grace):
		p.Kill()
	}
}

// Log returns what the process has written so far.
func (p *Proc) Log() []byte {
	b, _ := os.ReadFile(p.LogPath)
	return b
}

// WaitReady polls admin's /readyz (HTTPS with p.CertsDir's client root, or HTTP for an
// insecure process) until it answers 200, failing at once if the process exits (with
// ErrPortTaken when its log says an address was in use), or after timeout.
func (p *Proc) WaitReady(admin string, timeout time.Duration) error {
	hc, scheme := &http.Client{Timeout: time.Second}, "http://"
	if p.CertsDir != "" {
		st, err := certs.NewClientStore(p.CertsDir, "root")
		if err != nil {
			return fmt.Errorf("%w for the admin port: %w", errNoCerts, err)
		}
		hc.Transport, scheme = &http.Transport{TLSClientConfig: st.LibraryConfig(), DisableKeepAlives: true}, "https://"
	}
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		if !p.Running() {
			log := p.Log()
			if bytes.Contains(log, []byte("address already in use")) {
				return fmt.Errorf("%w: %s", ErrPortTaken, log)
			}
			return fmt.Errorf("exited: %s", log)
		}
		resp, err := hc.Get(scheme + admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(pollInterval)
	}
	return fmt.Errorf("not ready after %v: %s", timeout, last)
}
