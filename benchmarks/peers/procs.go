package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// proc is a server child process with its output in a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startProc starts bin with args, its output going to dir/name.log. The process gets
// SIGKILL if this one dies first.
func startProc(dir, name, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

// stop ends the process: SIGTERM, then SIGKILL after 10 s.
func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail returns the end of the process's log.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// freeAddrs returns n loopback addresses with ports the OS chose (free when chosen; a
// cluster whose port was taken meanwhile fails to start and is started again).
func freeAddrs(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// waitFor calls f until it returns nil, a process of procs exits, or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, procs []*proc, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		for _, p := range procs {
			if p.exited() {
				return fmt.Errorf("%s exited:\n%s", p.name, p.tail())
			}
		}
		try, cancelTry := context.WithTimeout(ctx, 2*time.Second)
		last = f(try)
		cancelTry()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cluster is a running 3-node cluster of one system.
type cluster struct {
	addrs    []string // client addresses
	certsDir string   // Lockstep's certificates; empty for the peers
	procs    []*proc
}

func (c *cluster) stop() {
	for _, p := range c.procs {
		p.stop()
	}
}

// startSystem starts sys's cluster in dir, trying again on new ports if it fails (a
// port taken between choosing and binding).
func startSystem(ctx context.Context, sys string, bins binaries, dir string) (*cluster, error) {
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		sub := filepath.Join(dir, fmt.Sprintf("try%d", attempt))
		if err = os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		var c *cluster
		switch sys {
		case "etcd":
			c, err = startEtcd(ctx, bins.etcd, sub)
		case "nats", "nats-sync":
			c, err = startNATS(ctx, bins.nats, sub, sys == "nats-sync")
		case "lockstep":
			c, err = startLockstep(ctx, bins.lockstep, sub)
		default:
			return nil, fmt.Errorf("unknown system %q", sys)
		}
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "%s did not start (attempt %d): %v\n", sys, attempt, err)
	}
	return nil, err
}
