package jepsen

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Process is one child process of the harness (a `lockstep node`, a `lockstep sink`),
// its stdout and stderr going to a log file. A Cluster runs its nodes as Processes; a
// test that needs a process the Cluster does not describe (a node started with flags of
// its own, on addresses it chose) starts one with StartProcess. Its owner ends it (Kill,
// Stop).
type Process struct {
	// Cmd is the running command.
	Cmd *exec.Cmd
	// LogPath is the file holding its stdout and stderr.
	LogPath string
	// Exited is closed once the process has exited and been waited for.
	Exited chan struct{}
}

// StartProcess starts bin with args, its environment env (nil: this process's), its
// output going to a new file at logPath. attr, if not nil, is the process's
// SysProcAttr (another uid, for example).
func StartProcess(logPath string, env []string, attr *syscall.SysProcAttr, bin string, args ...string) (*Process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &Process{Cmd: exec.Command(bin, args...), LogPath: logPath, Exited: make(chan struct{})}
	p.Cmd.Env = env
	p.Cmd.Stdout, p.Cmd.Stderr = logf, logf
	p.Cmd.SysProcAttr = attr
	if err := p.Cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { // owned by the process: ends when it exits
		p.Cmd.Wait()
		logf.Close()
		close(p.Exited)
	}()
	return p, nil
}

// Running reports whether the process has not exited yet (paused or not).
func (p *Process) Running() bool {
	select {
	case <-p.Exited:
		return false
	default:
		return true
	}
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.Cmd.Process.Signal(sig) }

// Kill stops the process at once (SIGKILL) and waits for it.
func (p *Process) Kill() {
	if p.Running() {
		p.Cmd.Process.Kill()
	}
	<-p.Exited
}

// Stop sends SIGTERM and waits up to grace for a clean exit, then kills the process.
func (p *Process) Stop(grace time.Duration) {
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
func (p *Process) Log() []byte {
	b, _ := os.ReadFile(p.LogPath)
	return b
}

// WaitReady polls the node's /readyz at admin (HTTPS with tlsCfg, or HTTP when tlsCfg is
// nil: an insecure node) until it answers 200, failing at once if the process exits
// (with ErrPortTaken when its log says an address was in use, else ErrNodeExited), when
// ctx ends, or after timeout.
func (p *Process) WaitReady(ctx context.Context, admin string, tlsCfg *tls.Config, timeout time.Duration) error {
	hc, scheme := &http.Client{Timeout: time.Second}, "http://"
	if tlsCfg != nil {
		hc.Transport, scheme = &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true}, "https://"
	}
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		if !p.Running() {
			log := p.Log()
			if bytes.Contains(log, []byte("address already in use")) {
				return fmt.Errorf("%w: %s", ErrPortTaken, lastLines(log, 5))
			}
			return fmt.Errorf("%w: %s", ErrNodeExited, lastLines(log, 5))
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
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready after %v: %s", timeout, last)
}

// BuildLockstep builds the lockstep command (github.com/lockstepdb/lockstep/cmd/lockstep,
// from the module the go tool finds in the working directory) into dir and returns the
// binary's path: with -race if race, and with the build tags given (lockstep_nondet: a
// test procedure that breaks determinism).
func BuildLockstep(dir string, race bool, tags ...string) (string, error) {
	bin := filepath.Join(dir, "lockstep")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if race {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "github.com/lockstepdb/lockstep/cmd/lockstep")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("jepsen: go build: %w\n%s", err, out)
	}
	return bin, nil
}
