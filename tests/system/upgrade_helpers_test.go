package system

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/jepsen"
)

// Helpers of the rolling-upgrade tests (upgrade_test.go, upgrade_processor_test.go):
// installed binaries that a restart replaces, the supervisor's restarts, and the checks
// of a node restarted on a build that cannot run the cluster.

// installed are the nodes' installed binaries, which a restart command replaces: a
// symbolic link per node, dir/ID/upgradeapp, that the supervisor starts.
type installed struct{ dir string }

// installBinaries installs build as every node of c's binary.
func installBinaries(t *testing.T, c *proctest.Cluster, build string) installed {
	t.Helper()
	inst := installed{dir: t.TempDir()}
	for _, n := range c.Procs {
		inst.install(t, n.ID, build)
	}
	return inst
}

// path returns node id's installed binary.
func (i installed) path(id string) string { return filepath.Join(i.dir, id, "upgradeapp") }

// install makes build node id's installed binary, atomically.
func (i installed) install(t *testing.T, id, build string) {
	t.Helper()
	tmp := i.path(id) + ".new"
	if err := errors.Join(os.MkdirAll(filepath.Dir(tmp), 0o755), os.Symlink(build, tmp), os.Rename(tmp, i.path(id))); err != nil {
		t.Fatal(err)
	}
}

// rollCommand is the --restart-cmd of `lockstep cluster restart-plan` that rolls a node
// to build: it installs build as the node's binary ($LOCKSTEP_RESTART_ID), atomically, and
// restarts the node with the supervisor's restart script.
func (i installed) rollCommand(build, script string) string {
	return fmt.Sprintf(`ln -sfn %s %s.new && mv -T %[2]s.new %[2]s && sh %s "$LOCKSTEP_RESTART_ID"`,
		shellWord(build), `"`+i.dir+`/$LOCKSTEP_RESTART_ID/upgradeapp"`, shellWord(script))
}

// restartSupervised stops node id's process with the supervisor's restart script (as
// the rolling restart's command does), which returns once the supervisor started the
// node's installed binary again.
func restartSupervised(t *testing.T, sup *jepsen.Supervisor, script, id string) {
	t.Helper()
	cmd := exec.Command("sh", script, id)
	cmd.Env = proctest.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restart %s: %v\n%s", id, err, out)
	}
}

// waitBack waits until node n's latest process is ready.
func waitBack(t *testing.T, ctx context.Context, sup *jepsen.Supervisor, n *proctest.Node) {
	t.Helper()
	if err := sup.Current(n.ID).WaitReady(ctx, n.Admin, proctest.TLS(), 60*time.Second); err != nil {
		t.Fatalf("%s after its restart: %v", n.ID, err)
	}
}

// followers returns c's nodes other than the leader the cluster at addrs reports.
func followers(t *testing.T, bin, addrs string, c *proctest.Cluster) []*proctest.Node {
	t.Helper()
	leader := clusterStatus(t, bin, addrs).Leader
	var out []*proctest.Node
	for _, n := range c.Procs {
		if n.ID != leader {
			out = append(out, n)
		}
	}
	return out
}

// checkRefusesAndHandsOff checks node n, restarted on a build that cannot run the
// cluster (named build in messages): it refuses to serve, its status saying reason, and,
// made leader with `lockstep cluster transfer-leader`, hands the leadership off to another
// node (DESIGN.md section 10: a node that lacks active code refuses, never diverges).
func checkRefusesAndHandsOff(t *testing.T, ctx context.Context, bin, addrs string, sup *jepsen.Supervisor, n *proctest.Node, build, reason string) {
	t.Helper()
	cl, err := client.Open(client.Config{Addrs: []string{n.Client}, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testutil.WaitFor(t, 60*time.Second, func() error {
		st, err := cl.Status(ctx, n.Client)
		if err != nil {
			return err
		}
		if st.Ready || !strings.Contains(st.Incompatible, reason) || !strings.Contains(st.NotReadyReason, reason) {
			return fmt.Errorf("%s on build %s: ready %t, incompatible %q, not ready %q; want a refusal saying %q",
				n.ID, build, st.Ready, st.Incompatible, st.NotReadyReason, reason)
		}
		return nil
	})
	proctest.MustRun(t, bin, "cluster", "transfer-leader", n.ID, "--addr", addrs)
	testutil.WaitFor(t, 30*time.Second, func() error {
		if !strings.Contains(string(sup.Current(n.ID).Log()), "unfit replica handed leadership off") {
			return fmt.Errorf("%s logged no hand-off of the leadership it was given", n.ID)
		}
		cs := proctest.StatusAnyHealth[clusterStatusJSON](t, bin, addrs)
		if cs.Leader == "" || cs.Leader == n.ID {
			return fmt.Errorf("leader %q", cs.Leader)
		}
		return nil
	})
}

// checkDeployment checks a deployment as `deploy list|activate` print it: the cluster
// version and, among the active registrations, regs.
func checkDeployment(t *testing.T, what, out string, version uint64, regs []string) {
	t.Helper()
	wants := []string{fmt.Sprintf(`(?m)^cluster version\s+%d$`, version)}
	for _, g := range regs {
		wants = append(wants, `(?m)^active\s+`+regexp.QuoteMeta(g)+`$`)
	}
	for _, want := range wants {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("%s printed no %q:\n%s", what, want, out)
		}
	}
}

// shellWord quotes s as one word of a POSIX shell.
func shellWord(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
