package system

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// TestCustomBinaryNode: a node binary of one's own — examples/customproc's node command,
// which is node/runner.Main over its registry — has what `lockstep node` has. Three of its
// processes make a cluster from lockstep node's flags (started as jepsen starts lockstep's)
// and serve its custom procedure; a replica made to diverge is rebuilt automatically
// (the binary is built with lockstep_nondet, whose test.nondet the runner registers) and
// serves the custom procedure again; SIGHUP reloads the certificates (a broken file is
// refused, the node keeps serving); SIGTERM shuts a node down with exit code 0.
func TestCustomBinaryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := proctest.BuildBinary(t)
	exe := proctest.BuildCustomProc(t, "lockstep_nondet")
	certs := filepath.Join(t.TempDir(), "certs")
	copyDir(t, proctest.SharedCerts(), certs) // SIGHUP below breaks and mends a file of its own
	c := proctest.StartClusterWith(t, exe, 3, "--certs-dir", certs)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(c.AddrFlag(), ","), TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	words := func(line string, want int64) {
		t.Helper()
		var got int64
		if err := cl.Invoke(ctx, "words.count", []byte("doc-1"), map[string]string{"line": line}, &got); err != nil || got != want {
			t.Fatalf("words.count %q: got %d, %v; want %d", line, got, err, want)
		}
	}
	words("to be or not to be", 4)

	// The automatic rebuild of a divergent follower.
	leader := proctest.LeaderNode(t, bin, c)
	bad := c.Procs[0]
	if bad == leader {
		bad = c.Procs[1]
	}
	nondet(t, ctx, cl, "k1", bad.ID)
	badCl, err := client.Open(client.Config{Addrs: []string{bad.Client}, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer badCl.Close()
	testutil.WaitFor(t, 2*time.Minute, func() error {
		st, err := badCl.Status(ctx, bad.Client)
		if err != nil {
			return err // closed for its restart
		}
		if st.Rebuilds != 1 || st.Rebuild != "" || st.Suffrage != "voter" || !st.Ready || st.Divergent != "" {
			return fmt.Errorf("%s: rebuilds %d, rebuild %q (%s), suffrage %q, ready %t, divergent %q", bad.ID, st.Rebuilds,
				st.Rebuild, st.RebuildNote, st.Suffrage, st.Ready, st.Divergent)
		}
		return nil
	})
	if !bad.Running() {
		t.Fatalf("%s exited instead of rebuilding in its process", bad.ID)
	}
	proctest.WaitConvergedVoters(t, bin, c.AddrFlag(), []string{"n1", "n2", "n3"})
	words("that is the question", 8)

	// SIGHUP reloads the certificate files: a broken one is refused, the node goes on.
	crt := filepath.Join(certs, "node.crt")
	good, err := os.ReadFile(crt)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crt, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup := c.Procs[2]
	if err := hup.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		if !strings.Contains(string(hup.Log()), "certificate reload failed; keeping the current certificates") {
			return fmt.Errorf("%s logged no refused reload", hup.ID)
		}
		return nil
	})
	if err := os.WriteFile(crt, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := hup.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if _, err := client.InvokeAs[int64](ctx, cl, "words.count", []byte("doc-2"), map[string]string{"line": "hup"}); err != nil {
		t.Fatal(err)
	}
	if err := hup.WaitReady(hup.Admin, proctest.ReadyTimeout); err != nil {
		t.Fatalf("%s after SIGHUP: %v", hup.ID, err)
	}

	// SIGTERM: a clean shutdown.
	if err := hup.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hup.Exited:
	case <-time.After(proctest.CommandTimeout):
		t.Fatalf("%s: no exit within %v of SIGTERM", hup.ID, proctest.CommandTimeout)
	}
	if code := hup.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("%s: exit %d after SIGTERM, want 0", hup.ID, code)
	}
}
