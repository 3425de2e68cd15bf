package replica

import (
	"fmt"
	"slices"
)

// recordHashes keeps this replica's partition hashes at a hash-check position (DESIGN.md
// invariant 6). The records are compared with other replicas' by the node.
func (f *FSM) recordHashes(index uint64) {
	rec := HashRecord{Index: index, Hashes: f.eng.Hashes()}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hashes = append(f.hashes, rec)
	if over := len(f.hashes) - f.cfg.HashHistory; over > 0 {
		f.hashes = slices.Delete(f.hashes, 0, over)
	}
}

// HashRecords returns the recorded hash checks, oldest first.
func (f *FSM) HashRecords() []HashRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.hashes)
}

// HashAt returns the hashes recorded at index, if still kept.
func (f *FSM) HashAt(index uint64) ([]uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.hashes {
		if r.Index == index {
			return r.Hashes, true
		}
	}
	return nil, false
}

// CompareHashes checks this replica's records against peers' records: for every position
// they share, if this replica's hashes differ from a strict majority of all replicas that
// reported it, this replica marks itself divergent. It returns the divergence error, if any.
func (f *FSM) CompareHashes(peers [][]HashRecord) error {
	own := f.HashRecords()
	for _, mine := range own {
		agree, disagree := 1, 0 // this replica agrees with itself
		for _, recs := range peers {
			for _, r := range recs {
				if r.Index != mine.Index {
					continue
				}
				if slices.Equal(r.Hashes, mine.Hashes) {
					agree++
				} else {
					disagree++
				}
			}
		}
		if disagree > agree {
			err := fmt.Errorf("%w: at log index %d this replica's partition hashes differ from %d of %d replicas",
				ErrDivergent, mine.Index, disagree, agree+disagree)
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
