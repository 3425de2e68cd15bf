package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// Helpers for processor tests that drive an FSM with log entries. The chain:
//
//	stream "in" (key k, value "g|payload") → processor "a.count": counts records per key
//	in table "count", re-emits (key g, value k) to stream "mid" → processor "b.group":
//	counts per group in table "groups".
//
// "a.count" fails for payload "fail" (an error) and "panic" (a panic), after writing and
// emitting, so a failed record's effects must be undone.

var errChainFail = errors.New("chain record asked to fail")

func chainRegistry() *procedures.Registry {
	r := procedures.Builtins()
	procedures.MustRegisterProcessor(r, "a.count", "in", func(tx *partition.Tx, rec partition.Record) error {
		group, payload, _ := strings.Cut(string(rec.Value), "|")
		if err := bumpCounter(tx, "count", rec.Key); err != nil {
			return err
		}
		if err := tx.Emit("mid", []byte(group), rec.Key, rec.EventTime); err != nil {
			return err
		}
		switch payload {
		case "fail":
			return fmt.Errorf("%w: offset %d", errChainFail, rec.Offset)
		case "panic":
			panic("chain record asked to panic")
		}
		return nil
	}, procedures.Emits("mid"))
	procedures.MustRegisterProcessor(r, "b.group", "mid", func(tx *partition.Tx, rec partition.Record) error {
		return bumpCounter(tx, "groups", rec.Key)
	})
	return r
}

func bumpCounter(tx *partition.Tx, table string, key []byte) error {
	var n uint64
	if v, ok := tx.Get(table, key); ok {
		n = binary.BigEndian.Uint64(v)
	}
	return tx.Put(table, key, binary.BigEndian.AppendUint64(nil, n+1))
}

func newChainFSM(t fataler, cfg Config) *FSM {
	t.Helper()
	return newFSMWith(t, cfg, chainRegistry())
}

// createStreamItem is stream.create of name over all parts partitions.
func createStreamItem(parts int, name string) batch.Item {
	args, _ := msgpack.Marshal(builtin.StreamDefinition{Name: name})
	return batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamCreate,
		Scope: partition.AllPartitions(parts), Args: args}
}

// appendItem is stream.append of (key, value) to stream, without a session.
func appendItem(parts int, stream, key, value string) batch.Item {
	args, _ := msgpack.Marshal(builtin.StreamAppendArgs{Stream: stream, Record: []byte(value)})
	return batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamAppend, Key: []byte(key),
		Partition: int32(partition.PartitionOf([]byte(key), parts)), Args: args}
}

// entriesToLogs makes the Raft log of entries, from index 1.
func entriesToLogs(entries []batch.Entry) []*raft.Log {
	logs := make([]*raft.Log, len(entries))
	for i := range entries {
		logs[i] = commandLog(uint64(i+1), &entries[i])
	}
	return logs
}

// counters reads a counter table of every partition as key → count.
func counters(f *FSM, table string) map[string]uint64 {
	out := map[string]uint64{}
	for _, p := range f.Engine().Partitions() {
		p.Scan(table, partition.ScanOptions{}, func(k, v []byte) bool {
			out[string(k)] += binary.BigEndian.Uint64(v)
			return true
		})
	}
	return out
}

// streamDump is a canonical text of one stream on every partition.
func streamDump(f *FSM, name string) string {
	var b bytes.Buffer
	for _, p := range f.Engine().Partitions() {
		recs, next, err := p.ReadStream(name, 0, 1<<30)
		fmt.Fprintf(&b, "p%d next %d err %v\n", p.ID(), next, err)
		for _, r := range recs {
			fmt.Fprintf(&b, "  %d %q %q %d\n", r.Offset, r.Key, r.Value, r.EventTime)
		}
	}
	return b.String()
}

// deadLetters decodes the dead letters of stream on every partition.
func deadLetters(t fataler, f *FSM, stream string) []partition.DeadLetter {
	var out []partition.DeadLetter
	for _, p := range f.Engine().Partitions() {
		recs, _, err := p.ReadStream(stream+partition.DeadLetterSuffix, 0, 1<<30)
		if err != nil {
			continue
		}
		for _, r := range recs {
			var dl partition.DeadLetter
			if err := msgpack.Unmarshal(r.Value, &dl); err != nil {
				t.Fatalf("dead letter: %v", err)
			}
			out = append(out, dl)
		}
	}
	return out
}
