package main

import (
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
)

// statusJSON is a node's status as `lockstep cluster status --output json` prints it: the
// client's Status under its JSON names, with state hashes as 16-digit hex strings (a JSON
// number cannot hold every uint64 exactly). Its keys are those of the node's HTTP /status
// (node.StatusJSON); TestStatusJSONKeys holds them equal.
type statusJSON struct {
	client.Status
	// Hashes is each partition's current state hash, as hex; it replaces Status.Hashes.
	Hashes []string `json:"hashes"`
	// HashChecks are the hashes recorded at hash-check positions, as hex; they replace
	// Status.HashChecks.
	HashChecks []hashCheckJSON `json:"hash_checks,omitempty"`
}

// hashCheckJSON is one hash-check record of a statusJSON.
type hashCheckJSON struct {
	// Index is the log index of the check.
	Index uint64 `json:"index"`
	// Hashes are the partitions' state hashes at Index, as hex.
	Hashes []string `json:"hashes"`
	// Meta is the hash of the state besides the partitions at Index, as hex; empty if
	// not reported.
	Meta string `json:"meta,omitempty"`
}

// newStatusJSON converts a node's status to its JSON form.
func newStatusJSON(st client.Status) statusJSON {
	s := statusJSON{Status: st, Hashes: node.HexHashes(st.Hashes)}
	for _, h := range st.HashChecks {
		s.HashChecks = append(s.HashChecks, hashCheckJSON{Index: h.Index, Hashes: node.HexHashes(h.Hashes), Meta: node.HexMeta(h.Meta)})
	}
	return s
}
