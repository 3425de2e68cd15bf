package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// TestCLINodeGracefulShutdown checks that `lockstep node` shuts down cleanly, exit code 0,
// on SIGTERM and on SIGINT.
func TestCLINodeGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := proctest.BuildBinary(t)
	for i, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		a := testutil.FreeAddrs(t, 3)
		p := proctest.SpawnNode(t, bin, fmt.Sprintf("g%d", i), "--id", "g", "--data", filepath.Join(t.TempDir(), "g"),
			"--raft", a[0], "--client", a[1], "--admin", a[2],
			"--bootstrap", "g="+a[0]+"="+a[1])
		p.Admin = a[2]
		if err := p.WaitReady(p.Admin, proctest.ReadyTimeout); err != nil {
			t.Fatal(err)
		}
		p.Cmd.Process.Signal(sig)
		select {
		case <-p.Exited:
		case <-time.After(proctest.CommandTimeout):
			t.Fatalf("#%d: no exit within %v of %v", i, proctest.CommandTimeout, sig)
		}
		log, _ := os.ReadFile(p.LogPath)
		if code := p.Cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(string(log), "shutting down") {
			t.Fatalf("#%d: exit %d after %v, want 0; log:\n%s", i, code, sig, log)
		}
	}
}
