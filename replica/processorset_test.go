package replica

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// TestUpgradeToProcessorSets: an upgrade from cluster version 2 to 3 runs the same
// processors with the same code on both sides (version 2 had them all active), so the
// partitions' state equals that of the same log without the upgrade; after it, the rest
// fingerprint is the tables' only, and a replica whose binary lacks an active processor
// refuses, naming it.
func TestUpgradeToProcessorSets(t *testing.T) {
	reg := procRegistry(true)
	v2 := Config{Partitions: verParts, MaxClusterVersion: 2}
	info := batch.ClusterInfo{ClusterID: "c", Partitions: verParts, Procedures: reg.Fingerprint()}
	BootstrapInfo(v2, reg, &info)
	members := []batch.MemberVersions{{ID: "n1", Min: 1, Max: 3}}
	mk := func(upgrade bool) []*raft.Log {
		mid := []batch.Item{appendItem(verParts, "in", "k", "b")}
		if upgrade {
			mid = append(mid, upgradeItem(t, 3, members...))
		}
		entries := [][]batch.Item{
			{{Kind: batch.KindInitCluster, Args: marshal(t, &info)}, nodeItem(t, "n1")},
			{createStreamItem(verParts, "in")},
			{appendItem(verParts, "in", "k", "a")},
			mid,
			{appendItem(verParts, "in", "k", "c")},
		}
		var logs []*raft.Log
		for i, items := range entries {
			logs = append(logs, commandLog(uint64(i+1), &batch.Entry{Time: int64(i+1) * 1e9, Items: items}))
		}
		return logs
	}
	plain := newFSMWith(t, Config{Partitions: verParts}, reg)
	defer plain.Close()
	plain.ApplyBatch(mk(false))
	up := newFSMWith(t, Config{Partitions: verParts}, reg)
	defer up.Close()
	out := up.ApplyBatch(mk(true))
	if err := out[3].(*batch.Results).Items[1].Err; err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if d := up.Deployment(); d.Version != 3 || d.Rest != reg.TablesFingerprint() {
		t.Fatalf("deployment after the upgrade: %+v", d)
	}
	if !slices.Equal(up.eng.Hashes(), plain.eng.Hashes()) {
		t.Fatalf("partitions after the upgrade %x, without it %x", up.eng.Hashes(), plain.eng.Hashes())
	}

	// A binary without the active processor t.proc, given the state at version 3,
	// refuses, naming it (at version 2 it would have named only a fingerprint).
	bare := procedures.Builtins()
	procedures.MustRegister(bare, "t.read", func(tx *partition.Tx, a struct{}) (string, error) { return "", nil }, procedures.ReadOnly())
	lacking := snapshotRoundTripWith(t, up, func() *FSM { return newFSMWith(t, Config{Partitions: verParts}, bare) })
	defer lacking.Close()
	if err := lacking.Incompatible(); !errors.Is(err, ErrMissingRegistration) || !strings.Contains(err.Error(), "processor t.proc@") {
		t.Fatalf("a binary without t.proc: %v, want a refusal naming processor t.proc", err)
	}
}
