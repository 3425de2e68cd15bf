package sequencer

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/lockstepdb/lockstep/internal/batch"
)

// testFSM is a raft.BatchingFSM that decodes entries with batch.DecodeEntry and answers
// each item with its Args followed by the FSM's running item count (8 bytes, big endian).
// Its state is the count, a running hash of every item and entry time it applied, and the
// set of Args it saw: equal on every replica that applied the same sequence.
type testFSM struct {
	// gate, if set, blocks ApplyBatch until the channel is closed.
	gate atomic.Pointer[chan struct{}]

	mu         sync.Mutex
	st         fsmState
	times      []int64 // entry times, in order (not part of the snapshot)
	maxEntry   int     // largest entry seen, in bytes
	maxItems   int     // most items seen in one entry
	lastKinds  []batch.Kind
	hashChecks int
}

// fsmState is what a testFSM snapshot holds.
type fsmState struct {
	Count     uint64
	Hash      uint64
	LastIndex uint64
	Seen      map[string]int
}

func newTestFSM() *testFSM {
	return &testFSM{st: fsmState{Seen: map[string]int{}}}
}

// block makes ApplyBatch wait until the returned function is called.
func (f *testFSM) block() (release func()) {
	g := make(chan struct{})
	f.gate.Store(&g)
	return func() { close(g) }
}

var _ raft.BatchingFSM = (*testFSM)(nil)

func (f *testFSM) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

func (f *testFSM) ApplyBatch(logs []*raft.Log) []any {
	if g := f.gate.Load(); g != nil {
		<-*g
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]any, len(logs))
	var e batch.Entry
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		if err := batch.DecodeEntry(l.Data, &e); err != nil {
			out[i] = fmt.Errorf("index %d: %w", l.Index, err)
			continue
		}
		f.maxEntry = max(f.maxEntry, len(l.Data))
		f.maxItems = max(f.maxItems, len(e.Items))
		f.times = append(f.times, e.Time)
		h := fnv.New64a()
		var num [8]byte
		binary.BigEndian.PutUint64(num[:], f.st.Hash)
		h.Write(num[:])
		binary.BigEndian.PutUint64(num[:], uint64(e.Time))
		h.Write(num[:])
		res := &batch.Results{Index: l.Index, Items: make([]batch.Result, len(e.Items))}
		f.lastKinds = f.lastKinds[:0]
		for j := range e.Items {
			it := &e.Items[j]
			f.lastKinds = append(f.lastKinds, it.Kind)
			f.st.Count++
			h.Write([]byte{byte(it.Kind)})
			h.Write(it.Args)
			if it.Kind == batch.KindHashCheck {
				f.hashChecks++
				continue
			}
			f.st.Seen[string(it.Args)]++
			v := append([]byte(nil), it.Args...)
			res.Items[j].Value = binary.BigEndian.AppendUint64(v, f.st.Count)
		}
		f.st.Hash = h.Sum64()
		f.st.LastIndex = l.Index
		out[i] = res
	}
	return out
}

// summary is the comparable part of an fsmState. Hash covers every item, so equal
// summaries mean equal sequences.
type summary struct {
	Count, Hash, LastIndex uint64
}

// state returns the FSM's summary.
func (f *testFSM) state() summary {
	f.mu.Lock()
	defer f.mu.Unlock()
	return summary{Count: f.st.Count, Hash: f.st.Hash, LastIndex: f.st.LastIndex}
}

// seen returns how many times an item with args was applied.
func (f *testFSM) seen(args string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.Seen[args]
}

func (f *testFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.Marshal(f.st)
	return snapshotBytes(b), err
}

func (f *testFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var st fsmState
	if err := json.NewDecoder(rc).Decode(&st); err != nil {
		return err
	}
	if st.Seen == nil {
		st.Seen = map[string]int{}
	}
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
	return nil
}

type snapshotBytes []byte

func (b snapshotBytes) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(b); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snapshotBytes) Release() {}
