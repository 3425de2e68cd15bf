package node

import (
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures"
)

// TestJoinRefusedUnlessReachable: a join naming addresses where nothing answers, or where
// a node of another CA answers, is refused with a clear BadArguments error and the
// configuration keeps its voters (issue 11: three joins of absent nodes left the cluster
// leaderless for good). A reachable node of the cluster is admitted (TestMembership).
func TestJoinRefusedUnlessReachable(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	leader := c.waitLeader()
	fp := leader.fsm.Fingerprint()

	otherCA := t.TempDir()
	if err := certs.CreateLoopback(otherCA); err != nil {
		t.Fatal(err)
	}
	stranger, err := Start(Config{ID: "n8", DataDir: t.TempDir(), CertsDir: otherCA, Logger: testLogger(t)}, procedures.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()

	dead := testutil.FreeAddrs(t, 2)
	cases := []struct {
		name string
		args wire.JoinArgs
		want string
	}{
		{"nothing answers", wire.JoinArgs{ID: "n9", RaftAddr: dead[0], ClientAddr: dead[1], Partitions: 4, Procedures: fp, Build: BuildTarget()},
			"raft address " + dead[0]},
		{"raft answers, client does not", wire.JoinArgs{ID: "n9", RaftAddr: c.Nodes[1].RaftAddr(), ClientAddr: dead[1], Partitions: 4, Procedures: fp, Build: BuildTarget()},
			"client address " + dead[1]},
		{"another CA", wire.JoinArgs{ID: "n8", RaftAddr: stranger.RaftAddr(), ClientAddr: stranger.ClientAddr(), Partitions: 4, Procedures: fp, Build: BuildTarget()},
			"certificate"},
		{"another node answers", wire.JoinArgs{ID: "n9", RaftAddr: c.Nodes[1].RaftAddr(), ClientAddr: c.Nodes[1].ClientAddr(), Partitions: 4, Procedures: fp, Build: BuildTarget()},
			`node "n2" answers there`},
	}
	for i, tt := range cases {
		args, err := msgpack.Marshal(&tt.args)
		if err != nil {
			t.Fatal(err)
		}
		resp := rawCall(t, c.waitLeader().ClientAddr(), &wire.Request{Op: wire.OpJoin, Args: args})
		if resp.Code != wire.CodeBadArguments || !strings.Contains(resp.Message, "does not answer") || !strings.Contains(resp.Message, tt.want) {
			t.Errorf("#%d %s: got %v %q, want BadArguments saying the node does not answer and %q", i, tt.name, resp.Code, resp.Message, tt.want)
		}
	}
	if v := c.voters(); len(v) != 3 {
		t.Fatalf("voters %v, want the original 3", v)
	}
}
