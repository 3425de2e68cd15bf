package replica

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
)

// TestSnapshotCarriesStateHashes: a snapshot records the partition and meta hashes at its
// index, and Restore refuses a snapshot whose restored state does not match them
// (DESIGN.md invariant 6: state that differs is never served).
func TestSnapshotCarriesStateHashes(t *testing.T) {
	cfg := Config{Partitions: 4}
	f := newTestFSM(t, cfg)
	defer f.Close()
	var items []batch.Item
	for i := range 40 {
		items = append(items, stepItem(4, string(rune('a'+i%26))+"k", 0, 0, 0, 3, false))
	}
	f.ApplyBatch([]*raft.Log{commandLog(1, &batch.Entry{Time: 1, Items: items})})
	g := snapshotRoundTrip(t, f, cfg)
	g.Close()

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(bytes.NewReader(sink.Bytes()))
	n, _ := binary.ReadUvarint(br)
	meta := make([]byte, n)
	io.ReadFull(br, meta)
	rest, _ := io.ReadAll(br)
	var m snapshotMeta
	if err := msgpack.Unmarshal(meta, &m); err != nil {
		t.Fatal(err)
	}
	if m.State.Index != 1 || len(m.State.Hashes) != 4 || m.State.Meta == 0 {
		t.Fatalf("snapshot state record %+v", m.State)
	}
	for i, tamper := range []func(*snapshotMeta){
		func(m *snapshotMeta) { m.State.Hashes[2] ^= 1 },
		func(m *snapshotMeta) { m.State.Meta ^= 1 },
		func(m *snapshotMeta) { m.State.Index++ },
	} {
		mm := m
		mm.State.Hashes = append([]uint64(nil), m.State.Hashes...)
		tamper(&mm)
		enc, err := msgpack.Marshal(&mm)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		buf.Write(binary.AppendUvarint(nil, uint64(len(enc))))
		buf.Write(enc)
		buf.Write(rest)
		h := newTestFSM(t, cfg)
		err = h.Restore(io.NopCloser(&buf))
		h.Close()
		if !errors.Is(err, partition.ErrBadSnapshot) {
			t.Fatalf("#%d: got %v, want ErrBadSnapshot", i, err)
		}
	}
}
