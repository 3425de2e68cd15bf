package replica

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/batch"
)

// TestReidentify: a snapshot describes itself (ReadSnapshotInfo); a restored state given
// another cluster id and members keeps every partition hash and changes the meta hash,
// and its own snapshot restores, verified, with the new identity.
func TestReidentify(t *testing.T) {
	cfg := Config{Partitions: 4}
	f := newTestFSM(t, cfg)
	defer f.Close()
	node, _ := msgpack.Marshal(&batch.NodeInfo{ID: "n1", RaftAddr: "a:1", ClientAddr: "a:2", Incarnation: "old"})
	items := []batch.Item{initItem(t, cfg), {Kind: batch.KindNodeInfo, Args: node}}
	for i := range 40 {
		items = append(items, stepItem(4, string(rune('a'+i%26))+"k", 0, 0, 0, 3, false))
	}
	f.ApplyBatch([]*raft.Log{commandLog(1, &batch.Entry{Time: 1, Items: items})})
	persist := func(f *FSM) []byte {
		t.Helper()
		snap, err := f.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var sink memSink
		if err := snap.Persist(&sink); err != nil {
			t.Fatal(err)
		}
		return sink.Bytes()
	}
	src := persist(f)
	info, err := ReadSnapshotInfo(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	before := f.StateHashes()
	if info.Applied != 1 || info.ClusterID != "c" || info.Partitions != 4 || info.ClusterVersion == 0 ||
		!slices.Equal(info.State.Hashes, before.Hashes) || info.State.Meta != before.Meta {
		t.Fatalf("snapshot info %+v, state %+v", info, before)
	}

	g := newTestFSM(t, cfg)
	defer g.Close()
	if err := g.Restore(io.NopCloser(bytes.NewReader(src))); err != nil {
		t.Fatal(err)
	}
	members := []batch.NodeInfo{{ID: "r1", RaftAddr: "b:1", ClientAddr: "b:2"}, {ID: "r2", RaftAddr: "c:1", ClientAddr: "c:2"}}
	if err := g.Reidentify("copy", members); err != nil {
		t.Fatal(err)
	}
	after := g.StateHashes()
	if !slices.Equal(after.Hashes, before.Hashes) || after.Meta == before.Meta {
		t.Fatalf("reidentified: hashes %x meta %x, source %x meta %x: want the same partitions, another meta", after.Hashes, after.Meta, before.Hashes, before.Meta)
	}
	h := newTestFSM(t, cfg)
	defer h.Close()
	if err := h.Restore(io.NopCloser(bytes.NewReader(persist(g)))); err != nil {
		t.Fatal(err)
	}
	ci, _ := h.Cluster()
	nodes := h.Nodes()
	if ci.ClusterID != "copy" || len(nodes) != 2 || nodes["r1"] != members[0] || nodes["n1"].ID != "" || h.StateHashes().Meta != after.Meta {
		t.Fatalf("restored: cluster %q, nodes %v, meta %x; want copy, r1 and r2, %x", ci.ClusterID, nodes, h.StateHashes().Meta, after.Meta)
	}
	if err := h.Reidentify("", nil); err == nil {
		t.Errorf("an empty cluster id: no error")
	}
}
