package replica

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"pgregory.net/rapid"
)

// The processor property test generates a log of appends to the chain's input stream
// (see chainRegistry: a counting processor that re-emits keyed by another field, so
// records cross partitions, feeding a second processor), with failing and panicking
// records and ticks, under a small budget so that work carries over between entries. It
// applies the log to FSMs that group entries into ApplyBatch calls differently, run the
// partitions sequentially or in parallel, or restart from a snapshot half-way, and
// requires identical state hashes, positions, dead letters and streams (DESIGN.md
// invariant 1, section 5). It applies the same items split into other entries too, which
// moves the processor phases: the state may differ there, but the counts must equal a
// reference computed from the input records alone, as must every FSM's.

const chainBudget = 3

type chainRef struct {
	count, groups map[string]uint64
	dead          int
}

func genChainLog(t *rapid.T) (items [][]batch.Item, ref chainRef) {
	ref = chainRef{count: map[string]uint64{}, groups: map[string]uint64{}}
	items = append(items, []batch.Item{createStreamItem(propParts, "in")})
	// "mid" in the same entry as "in" or the next; before any append either way, so the
	// reference needs no undelivered records.
	if rapid.Bool().Draw(t, "mid in the first entry") {
		items[0] = append(items[0], createStreamItem(propParts, "mid"))
	} else {
		items = append(items, []batch.Item{createStreamItem(propParts, "mid")})
	}
	keys := []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	groups := []string{"g1", "g2", "g3"}
	for range rapid.IntRange(1, 40).Draw(t, "entries") {
		var e []batch.Item
		for range rapid.IntRange(0, 8).Draw(t, "items") {
			if rapid.IntRange(0, 9).Draw(t, "tick?") == 0 {
				e = append(e, batch.Item{Kind: batch.KindTick})
				continue
			}
			k := rapid.SampledFrom(keys).Draw(t, "key")
			g := rapid.SampledFrom(groups).Draw(t, "group")
			payload := rapid.SampledFrom([]string{"ok", "ok", "ok", "ok", "fail", "panic"}).Draw(t, "payload")
			e = append(e, appendItem(propParts, "in", k, g+"|"+payload))
			if payload == "ok" {
				ref.count[k]++
				ref.groups[g]++
			} else {
				ref.dead++
			}
		}
		items = append(items, e)
	}
	return items, ref
}

// drainTicks is enough tick entries for the chain to finish: each record takes at most
// one phase of each processor once the budget lets it through.
func drainTicks(records int) int { return 2*(records/chainBudget) + 8 }

func buildEntries(items [][]batch.Item, ticks int) []batch.Entry {
	var es []batch.Entry
	now := int64(1e12)
	for _, it := range items {
		now += 1e6
		es = append(es, batch.Entry{Time: now, Items: it})
	}
	for range ticks {
		now += 1e6
		es = append(es, batch.Entry{Time: now, Items: []batch.Item{{Kind: batch.KindTick}}})
	}
	return es
}

func chainConfig(sequential bool) Config {
	c := propConfig(1 << 20)
	c.Sequential = sequential
	c.ProcessorBudget = chainBudget
	return c
}

// applyChainGrouped applies logs in ApplyBatch calls of drawn sizes.
func applyChainGrouped(t *rapid.T, f *FSM, logs []*raft.Log, label string) {
	for i := 0; i < len(logs); {
		n := rapid.IntRange(1, 6).Draw(t, label)
		n = min(n, len(logs)-i)
		f.ApplyBatch(logs[i : i+n])
		i += n
	}
}

// chainState is everything compared between replicas of one log.
func chainState(t fataler, f *FSM) string {
	var b strings.Builder
	fmt.Fprintf(&b, "hashes %x\n", f.Engine().Hashes())
	for _, p := range f.Engine().Partitions() {
		if h, r := p.Hash(), p.RecomputeHash(); h != r {
			t.Fatalf("partition %d: incremental hash %x, recomputed %x", p.ID(), h, r)
		}
	}
	fmt.Fprintf(&b, "processors %+v\n", f.Processors())
	for _, s := range []string{"in", "mid", "in.dead", "mid.dead"} {
		b.WriteString(streamDump(f, s))
	}
	fmt.Fprintf(&b, "dead %+v\n", deadLetters(t, f, "in"))
	return b.String()
}

func checkChainRef(t *rapid.T, f *FSM, ref chainRef, label string) {
	if got := counters(f, "count"); !mapsEqual(got, ref.count) {
		t.Fatalf("%s: count table %v, reference %v", label, got, ref.count)
	}
	if got := counters(f, "groups"); !mapsEqual(got, ref.groups) {
		t.Fatalf("%s: groups table %v, reference %v", label, got, ref.groups)
	}
	if got := len(deadLetters(t, f, "in")); got != ref.dead {
		t.Fatalf("%s: %d dead letters, reference %d", label, got, ref.dead)
	}
	if f.ProcessorsPending() {
		t.Fatalf("%s: processors still pending after the drain ticks", label)
	}
	for _, st := range f.Processors() {
		if st.Processor != "a.count" && st.Processor != "b.group" {
			continue // the built-in click pipeline's, waiting for its streams
		}
		if st.Waiting || st.Lag != 0 {
			t.Fatalf("%s: processor not drained: %+v", label, st)
		}
	}
}

func mapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestProcessorChainDeterminism(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		items, ref := genChainLog(t)
		records := ref.dead
		for _, n := range ref.count {
			records += int(n)
		}
		logs := entriesToLogs(buildEntries(items, drainTicks(records)))

		// One entry per ApplyBatch, sequential: the baseline.
		base := newChainFSM(t, chainConfig(true))
		defer base.Close()
		for _, l := range logs {
			base.ApplyBatch([]*raft.Log{l})
		}
		want := chainState(t, base)
		checkChainRef(t, base, ref, "baseline")

		// Other groupings, parallel partitions.
		par := newChainFSM(t, chainConfig(false))
		defer par.Close()
		applyChainGrouped(t, par, logs, "parallel group")
		if got := chainState(t, par); got != want {
			t.Fatalf("parallel, grouped differently: state differs\n got: %s\nwant: %s", got, want)
		}

		// A replica restored from a snapshot half-way.
		half := rapid.IntRange(0, len(logs)).Draw(t, "snapshot at")
		first := newChainFSM(t, chainConfig(true))
		defer first.Close()
		applyChainGrouped(t, first, logs[:half], "first half group")
		restored := snapshotRoundTripWith(t, first, func() *FSM { return newChainFSM(t, chainConfig(false)) })
		defer restored.Close()
		applyChainGrouped(t, restored, logs[half:], "second half group")
		if got := chainState(t, restored); got != want {
			t.Fatalf("restored from a snapshot at %d: state differs\n got: %s\nwant: %s", half, got, want)
		}

		// The same items, each in an entry of its own: other processor phases, same counts.
		var split [][]batch.Item
		for _, e := range items {
			for _, it := range e {
				split = append(split, []batch.Item{it})
			}
		}
		other := newChainFSM(t, chainConfig(rapid.Bool().Draw(t, "split sequential")))
		defer other.Close()
		applyChainGrouped(t, other, entriesToLogs(buildEntries(split, drainTicks(records))), "split group")
		checkChainRef(t, other, ref, "split entries")
	})
}
