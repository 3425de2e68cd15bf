package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/vmihailenco/msgpack/v5"
)

// Helpers for tests that drive an FSM directly with log entries, without Raft.

// stepArgs are the arguments of the test procedure t.step.
type stepArgs struct {
	Pad  int  `msgpack:"p"` // the result carries this many extra bytes
	Fail bool `msgpack:"f"` // the procedure fails after writing (so the write is undone)
}

var errStepFailed = errors.New("step asked to fail")

// stepRegistry holds t.step: it counts its executions per key, so running an input twice
// shows in both the state and the results.
func stepRegistry() *procedures.Registry {
	r := procedures.New()
	procedures.MustRegister(r, "t.step", func(tx *partition.Tx, a stepArgs) ([]byte, error) {
		var n uint64
		if v, ok := tx.Get("t", tx.Key()); ok {
			n = binary.BigEndian.Uint64(v)
		}
		n++
		if err := tx.Put("t", tx.Key(), binary.BigEndian.AppendUint64(nil, n)); err != nil {
			return nil, err
		}
		if a.Fail {
			return nil, fmt.Errorf("%w at count %d", errStepFailed, n)
		}
		out := binary.BigEndian.AppendUint64(nil, n)
		return append(out, bytes.Repeat([]byte{'x'}, a.Pad)...), nil
	})
	return r
}

// fataler is the part of testing.TB (and rapid.T) the helpers use.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// testLogger sends logs at Warn and above to t.Log.
func testLogger(t *testing.T) *slog.Logger { return testutil.Logger(t, slog.LevelWarn) }

func newTestFSM(t fataler, cfg Config) *FSM {
	t.Helper()
	return newFSMWith(t, cfg, stepRegistry())
}

// newFSMWith returns a new FSM of cfg running reg's procedures. It logs to t.Log at Warn
// and above when t is a *testing.T, nowhere otherwise.
func newFSMWith(t fataler, cfg Config, reg *procedures.Registry) *FSM {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	if tt, ok := t.(*testing.T); ok {
		log = testLogger(tt)
	}
	f, err := New(cfg, reg, log)
	if err != nil {
		t.Fatalf("new FSM: %v", err)
	}
	return f
}

// stepItem is an invoke of t.step in a session.
func stepItem(parts int, key string, session, seq, ack uint64, pad int, fail bool) batch.Item {
	args, err := msgpack.Marshal(stepArgs{Pad: pad, Fail: fail})
	if err != nil {
		panic(err)
	}
	return batch.Item{
		Kind: batch.KindInvoke, Session: session, Seq: seq, AckThrough: ack,
		Procedure: "t.step", Key: []byte(key), Partition: int32(partition.PartitionOf([]byte(key), parts)),
		Args: args,
	}
}

// commandLog encodes e as the Raft log entry at index.
func commandLog(index uint64, e *batch.Entry) *raft.Log {
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: batch.AppendEntry(nil, e)}
}

// itemOutcome is one item's result in a comparable form.
type itemOutcome struct {
	Value   string
	Session uint64
	Err     string // wire code and message; "" for success
}

func outcomesOf(out []interface{}) [][]itemOutcome {
	var all [][]itemOutcome
	for _, o := range out {
		res, ok := o.(*batch.Results)
		if !ok || res == nil {
			all = append(all, nil)
			continue
		}
		items := make([]itemOutcome, len(res.Items))
		for i, r := range res.Items {
			items[i] = itemOutcome{Value: string(r.Value), Session: r.Session}
			if r.Err != nil {
				items[i].Err = CodeOf(r.Err).String() + ": " + r.Err.Error()
			}
		}
		all = append(all, items)
	}
	return all
}

// dumpMeta is a canonical text of the replicated state besides the partitions: the session
// table with every cached result, the counters, the cluster and node info.
func dumpMeta(f *FSM) string {
	var b strings.Builder
	fmt.Fprintf(&b, "time %d next %d sweep %d\n", f.lastTime, f.sess.nextID, f.sess.sweepAt)
	for _, id := range f.sess.ids() {
		ss := f.sess.byID[id]
		fmt.Fprintf(&b, "session %d last %d ack %d results %d\n", ss.ID, ss.LastActive, ss.AckThrough, len(ss.Results))
		seqs := make([]uint64, 0, len(ss.Results))
		for seq := range ss.Results {
			seqs = append(seqs, seq)
		}
		slices.Sort(seqs)
		for _, seq := range seqs {
			c := ss.Results[seq]
			fmt.Fprintf(&b, "  %d: %x code %d %q\n", seq, c.Value, c.Code, c.Message)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cluster != nil {
		fmt.Fprintf(&b, "cluster %+v\n", *f.cluster)
	}
	for _, id := range sortedNodeIDs(f.nodes) {
		fmt.Fprintf(&b, "node %+v\n", f.nodes[id])
	}
	return b.String()
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { return nil }

// snapshotRoundTrip snapshots f and restores the snapshot into a new FSM of cfg.
func snapshotRoundTrip(t fataler, f *FSM, cfg Config) *FSM {
	t.Helper()
	return snapshotRoundTripWith(t, f, func() *FSM { return newTestFSM(t, cfg) })
}

// snapshotRoundTripWith snapshots f and restores the snapshot into the FSM fresh returns.
func snapshotRoundTripWith(t fataler, f *FSM, fresh func() *FSM) *FSM {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatalf("persist: %v", err)
	}
	g := fresh()
	if err := g.Restore(io.NopCloser(&sink)); err != nil {
		g.Close()
		t.Fatalf("restore: %v", err)
	}
	return g
}
