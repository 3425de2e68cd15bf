package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCLINodeGracefulShutdown checks that `lockstep node` shuts down cleanly, exit code 0,
// on SIGTERM and on SIGINT.
func TestCLINodeGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := buildBinary(t)
	for i, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		a := freeAddrs(t, 3)
		p := spawnNode(t, bin, fmt.Sprintf("g%d", i), "--id", "g", "--data", filepath.Join(t.TempDir(), "g"),
			"--raft", a[0], "--client", a[1], "--admin", a[2],
			"--bootstrap", "g="+a[0]+"="+a[1])
		p.admin = a[2]
		if err := waitReady(p); err != nil {
			t.Fatal(err)
		}
		p.cmd.Process.Signal(sig)
		select {
		case <-p.exited:
		case <-time.After(commandTimeout):
			t.Fatalf("#%d: no exit within %v of %v", i, commandTimeout, sig)
		}
		log, _ := os.ReadFile(p.logPath)
		if code := p.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(string(log), "shutting down") {
			t.Fatalf("#%d: exit %d after %v, want 0; log:\n%s", i, code, sig, log)
		}
	}
}
