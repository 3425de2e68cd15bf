package replica

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// recordHashes keeps this replica's partition hashes and meta hash at a hash-check
// position (DESIGN.md invariant 6). The records are compared with other replicas' by the
// node. It runs on the apply goroutine.
//
// Records are keyed by log index, so an entry gets at most one: the first check in it. An
// entry can carry several (the sequencer's periodic check and a leader's idle check may
// share a batch), with inputs between them; recording each would give peers several
// different records under one index, which reads as disagreement. Every replica sees the
// same entry, so every replica keeps the same first record, and a record never changes
// once made (a peer may fetch it while the rest of the entry applies).
func (f *FSM) recordHashes(index uint64) {
	f.mu.Lock()
	recorded := len(f.hashes) > 0 && f.hashes[len(f.hashes)-1].Index == index
	f.mu.Unlock()
	if recorded {
		return
	}
	rec := HashRecord{Index: index, Hashes: f.eng.Hashes(), Meta: f.metaHash()}
	f.recordSessionStats(index)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hashes = append(f.hashes, rec)
	if over := len(f.hashes) - f.cfg.HashHistory; over > 0 {
		f.hashes = slices.Delete(f.hashes, 0, over)
	}
}

// metaHash hashes the replicated state that is not in the partitions: the session table
// with every cached result, the session id counter and the next expiry sweep, the latest
// batch time, the cluster's identity, the node addresses and the users table. Sessions, results and nodes
// are hashed in sorted order, so equal state gives an equal hash on every replica. It is
// never 0 (0 means unknown in a HashRecord). It runs on the apply goroutine and recomputes
// everything at each hash check (at most one per sequencer HashCheckInterval, default 1s):
// about 2 ms for 10,000 sessions holding two results each (BenchmarkMetaHash), so it is
// not maintained incrementally.
func (f *FSM) metaHash() uint64 {
	d := xxhash.New()
	b := f.metaBuf[:0]
	u := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	bs := func(v []byte) { u(uint64(len(v))); b = append(b, v...) }
	str := func(v string) { u(uint64(len(v))); b = append(b, v...) }
	spill := func() {
		if len(b) >= 4096 {
			d.Write(b)
			b = b[:0]
		}
	}

	u(uint64(f.lastTime))
	u(f.sess.nextID)
	u(uint64(f.sess.sweepAt))
	ids := f.metaIDs[:0]
	for id := range f.sess.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	u(uint64(len(ids)))
	for _, id := range ids {
		ss := f.sess.byID[id]
		u(ss.ID)
		u(uint64(ss.LastActive))
		u(ss.AckThrough)
		seqs := f.metaSeqs[:0]
		for seq := range ss.Results {
			seqs = append(seqs, seq)
		}
		slices.Sort(seqs)
		u(uint64(len(seqs)))
		for _, seq := range seqs {
			c := ss.Results[seq]
			u(seq)
			u(uint64(c.Code))
			str(c.Message)
			bs(c.Value)
			spill()
		}
		f.metaSeqs = seqs
		spill()
	}
	f.metaIDs = ids

	f.mu.Lock()
	if c := f.cluster; c != nil {
		u(1)
		str(c.ClusterID)
		u(uint64(c.Partitions))
		u(c.Procedures)
	} else {
		u(0)
	}
	u(uint64(len(f.nodes)))
	for _, id := range sortedNodeIDs(f.nodes) {
		n := f.nodes[id]
		str(id)
		str(n.ID)
		str(n.RaftAddr)
		str(n.ClientAddr)
		str(n.Incarnation)
		if n.ReadReplica {
			u(1)
		} else {
			u(0)
		}
	}
	f.mu.Unlock()
	f.users.Load().hash(u, str)
	f.conf.hash(u, str)
	f.dep.hash(u, str)

	d.Write(b)
	f.metaBuf = b[:0]
	if h := d.Sum64(); h != 0 {
		return h
	}
	return 1
}

// HashRecords returns the recorded hash checks, oldest first.
func (f *FSM) HashRecords() []HashRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.hashes)
}

// CompareHashes checks this replica's records against peers' records: for every position
// they share, if this replica's hashes (its partition hashes, or its meta hash of the
// state besides the partitions) differ from a strict majority of all replicas that
// reported it, this replica marks itself divergent. It returns the divergence error, if
// any.
func (f *FSM) CompareHashes(peers [][]HashRecord) error {
	own := f.HashRecords()
	for _, mine := range own {
		agree, disagree := 1, 0 // this replica agrees with itself
		partsDiffer := 0        // of disagree, those whose partition hashes differ
		for _, recs := range peers {
			for _, r := range recs {
				if r.Index != mine.Index {
					continue
				}
				parts := slices.Equal(r.Hashes, mine.Hashes)
				meta := r.Meta == mine.Meta || r.Meta == 0 || mine.Meta == 0
				switch {
				case parts && meta:
					agree++
				case !parts:
					disagree++
					partsDiffer++
				default:
					disagree++
				}
			}
		}
		if disagree > agree {
			what := "partition hashes differ"
			if partsDiffer == 0 {
				what = "hash of the non-partition state (session table, cluster and node info) differs"
			}
			err := fmt.Errorf("%w: at log index %d this replica's %s from %d of %d replicas",
				ErrDivergent, mine.Index, what, disagree, agree+disagree)
			f.MarkDivergent(err)
			return err
		}
	}
	return nil
}

// MarkDivergent records that this replica's state is wrong; it stops serving clients, and
// the function given to OnDivergent is called.
func (f *FSM) MarkDivergent(err error) {
	f.mu.Lock()
	first := f.divergent == nil
	if first {
		f.divergent = err
		f.updateServingLocked()
		f.log.Error("replica diverged: stops serving", "err", err)
	}
	notify := f.onDivergent
	f.mu.Unlock()
	if first && notify != nil {
		notify()
	}
}

// OnDivergent sets fn to be called, on the goroutine of MarkDivergent and without the
// FSM's lock, when this replica first marks itself divergent; the node uses it to give up
// leadership. fn must not block.
func (f *FSM) OnDivergent(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onDivergent = fn
}

// Divergent returns why this replica's state is known to be wrong, or nil.
func (f *FSM) Divergent() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.divergent
}
