package system

import (
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"strings"
	"testing"
	"time"
)

// quickly bounds a command that must fail without retrying: a binary start, one dial and
// one handshake on loopback (with -race the binary starts slower).
const quickly = 5 * time.Second

// TestWrongPort points the CLI at a node's admin (HTTP) address instead of its client
// address, and with another cluster id: each command fails at once, long before its
// --timeout, with a message that says what is wrong (HTTP / the admin address; the
// cluster), not "frame too large: 1213486160 bytes" or a timeout.
func TestWrongPort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node process")
	}
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 1)
	n := c.Procs[0]
	const timeout = "--timeout=30s"

	for _, tt := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"status at the admin address", []string{"cluster", "status", timeout, "--addr", n.Admin}, exitUnreachable,
			[]string{"speaks HTTP", "admin", n.Admin}},
		{"invoke at the admin address", []string{"invoke", "counter.add", "--key", "k", timeout, "--addr", n.Admin}, exitRefused,
			[]string{"speaks HTTP", "admin", n.Admin}},
		{"status of another cluster", []string{"cluster", "status", timeout, "--cluster-id", "other", "--addr", n.Client}, exitUnreachable,
			[]string{"cluster mismatch", "other"}},
		{"invoke in another cluster", []string{"invoke", "counter.add", "--key", "k", timeout, "--cluster-id", "other", "--addr", n.Client}, exitRefused,
			[]string{"cluster mismatch", "other"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := proctest.Run(t, bin, tt.args...)
			proctest.CheckFailure(t, r, tt.want[0])
			if r.Code != tt.code {
				t.Errorf("exit %d, want %d: %v", r.Code, tt.code, r)
			}
			for _, w := range tt.want[1:] {
				if !strings.Contains(r.Stderr, w) {
					t.Errorf("stderr does not mention %q: %v", w, r)
				}
			}
			if strings.Contains(r.Stderr, "frame too large") || strings.Contains(r.Stderr, "timeout") {
				t.Errorf("stderr speaks of a frame or a timeout: %v", r)
			}
			if r.Took > quickly {
				t.Errorf("took %v, want at most %v: %v", r.Took, quickly, r)
			}
		})
	}
}

// TestVersion checks that `lockstep --version` prints the binary's version, and that a
// node run from the same binary reports the same one in its status (JSON and table).
func TestVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node process")
	}
	bin := proctest.BuildBinary(t)
	r := proctest.MustRun(t, bin, "--version")
	version, ok := strings.CutPrefix(strings.TrimSpace(r.Stdout), "lockstep version ")
	if !ok || version == "" || version == "unknown" || strings.Contains(version, "\n") {
		t.Fatalf("--version printed %q, want \"lockstep version V\"", r.Stdout)
	}
	c := proctest.StartCluster(t, bin, 1)
	cs := clusterStatus(t, bin, c.AddrFlag())
	if len(cs.Nodes) != 1 || cs.Nodes[0].Version != version {
		t.Fatalf("the node reports version %q, --version says %q: %+v", cs.Nodes[0].Version, version, cs)
	}
	r = proctest.MustRun(t, bin, "cluster", "status", "--addr", c.AddrFlag())
	if !strings.Contains(r.Stdout, "VERSION") || !strings.Contains(r.Stdout, version) {
		t.Fatalf("the table does not show the version %q: %v", version, r)
	}
}
