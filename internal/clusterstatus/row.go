package clusterstatus

import (
	"context"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
)

// StatusJSON is a node's status as `lockstep cluster status --output json` prints it: the
// client's Status under its JSON names, with state hashes as 16-digit hex strings (a JSON
// number cannot hold every uint64 exactly). Its keys are those of the node's HTTP /status
// (node.StatusJSON); TestStatusJSONKeys holds them equal.
type StatusJSON struct {
	client.Status
	// Hashes is each partition's current state hash, as hex; it replaces Status.Hashes.
	Hashes []string `json:"hashes"`
	// HashChecks are the hashes recorded at hash-check positions, as hex; they replace
	// Status.HashChecks.
	HashChecks []HashCheckJSON `json:"hash_checks,omitempty"`
}

// HashCheckJSON is one hash-check record of a StatusJSON.
type HashCheckJSON struct {
	// Index is the log index of the check.
	Index uint64 `json:"index"`
	// Hashes are the partitions' state hashes at Index, as hex.
	Hashes []string `json:"hashes"`
	// Meta is the hash of the state besides the partitions at Index, as hex; empty if
	// not reported.
	Meta string `json:"meta,omitempty"`
}

// NewStatusJSON converts a node's status to its JSON form.
func NewStatusJSON(st client.Status) StatusJSON {
	s := StatusJSON{Status: st, Hashes: node.HexHashes(st.Hashes)}
	for _, h := range st.HashChecks {
		s.HashChecks = append(s.HashChecks, HashCheckJSON{Index: h.Index, Hashes: node.HexHashes(h.Hashes), Meta: node.HexMeta(h.Meta)})
	}
	return s
}

// Row is one node of `lockstep cluster status --output json`: its status, its lag and,
// for a node that did not answer, the error (and only its address).
type Row struct {
	StatusJSON
	// Lag is how many log entries the node has applied fewer than the leader.
	Lag uint64 `json:"lag"`
	// Error says why the node did not answer; empty when it did.
	Error string `json:"error,omitempty"`
}

// Report is the output of `lockstep cluster status --output json`.
type Report struct {
	// Leader is the leader's id, empty if none is known.
	Leader string `json:"leader"`
	// Nodes are the nodes asked, ordered by id; the ones that did not answer come last.
	Nodes []Row `json:"nodes"`

	status client.ClusterStatus // what the rows were made of: Health judges it
}

// Gather asks the cluster's nodes for their status (client.ClusterStatus: the seeds and
// every node their statuses name) and returns the rows, with each one's lag.
func Gather(ctx context.Context, cl *client.Client) (Report, error) {
	st, err := cl.Cluster().Status(ctx)
	if err != nil {
		return Report{}, err
	}
	return NewReport(st), nil
}

// NewReport makes the rows of st.
func NewReport(st client.ClusterStatus) Report {
	lag := st.Lag()
	var rows, failed []Row
	for _, n := range st.Nodes {
		if n.Err != nil {
			failed = append(failed, Row{StatusJSON: StatusJSON{Status: client.Status{ClientAddr: n.Addr}}, Error: n.Err.Error()})
			continue
		}
		r := Row{StatusJSON: NewStatusJSON(n.Status), Lag: lag[n.Status.NodeID]}
		r.HashChecks = nil // long; /status has them
		rows = append(rows, r)
	}
	return Report{Leader: st.Leader, Nodes: append(rows, failed...), status: st}
}

// Find returns the row of node id, if it answered.
func (r Report) Find(id string) (Row, bool) {
	for _, n := range r.Nodes {
		if n.Error == "" && n.NodeID == id && id != "" {
			return n, true
		}
	}
	return Row{}, false
}
