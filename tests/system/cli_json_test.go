package system

import (
	"encoding/json"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"testing"

	"github.com/lockstepdb/lockstep/client"
)

// The tests read the command's JSON output as a user's script does: these types hold
// the fields they check, decoded by the documented names (docs/operations.md).

// clusterStatusJSON is the output of `lockstep cluster status --output json`.
type clusterStatusJSON struct {
	Leader string    `json:"leader"`
	Nodes  []nodeRow `json:"nodes"`
}

// nodeRow is one node of clusterStatusJSON: its status (hashes as hex), its lag behind
// the leader and, for a node that did not answer, the error.
type nodeRow struct {
	client.Status
	Hashes []string `json:"hashes"`
	Lag    uint64   `json:"lag"`
	Error  string   `json:"error,omitempty"`
}

// procedureJSON is one row of `lockstep procedures --output json`.
type procedureJSON struct {
	Name         string          `json:"name"`
	Args         string          `json:"args"`
	ArgsExample  json.RawMessage `json:"args_example"`
	Result       string          `json:"result"`
	Partitioning string          `json:"partitioning"`
	ReadOnly     bool            `json:"read_only"`
	Doc          string          `json:"doc"`
}

// Exit codes of the lockstep command (docs/cli.md, Exit codes).
const (
	exitFailure     = 1 // anything no other code names
	exitDivergent   = 3 // a node diverged
	exitUnreachable = 4 // a node did not answer
	exitRefused     = 6 // the cluster refused this client: TLS, another cluster id or protocol
	exitRejected    = 8 // the cluster refused the request: ..., a stale group member
)

// clusterStatus runs `cluster status --output json` and decodes it.
func clusterStatus(t *testing.T, bin, addrs string) clusterStatusJSON {
	t.Helper()
	return proctest.ClusterStatus[clusterStatusJSON](t, bin, addrs)
}
