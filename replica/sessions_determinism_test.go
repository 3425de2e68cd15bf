package replica

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"pgregory.net/rapid"
)

// The session property test applies one generated log to several FSMs, each grouping the
// entries into ApplyBatch calls differently, and requires the same results, the same
// session table and the same hash records from all of them: the session table is a pure
// function of the log, whatever the apply grouping (DESIGN.md section 5, invariant 1).

const propParts = 4

// propConfig is small in every dimension so that the generated logs reach the limits.
func propConfig(maxCached int) Config {
	return Config{
		Partitions:           propParts,
		SessionTTL:           time.Second,
		SessionWindow:        8,
		MaxSessions:          6,
		MaxCachedResultBytes: maxCached,
		HashHistory:          1000,
		Sequential:           true,
	}
}

// sessionModel is what the generator remembers of a session to make plausible requests.
type sessionModel struct {
	next uint64 // the next new seq
	ack  uint64 // the AckThrough last sent
}

// genSessionLog generates a log of session traffic: opens, closes, invokes with new seqs,
// retries of old ones (often in the same entry or the next), acknowledgements that move
// and jump, requests past the window, hash checks, and batch time that sometimes passes
// the session TTL.
func genSessionLog(t *rapid.T) []*raft.Log {
	var (
		opened int
		model  = map[uint64]*sessionModel{}
		logs   []*raft.Log
		now    = int64(1e12)
		index  uint64
	)
	keys := []string{"a", "b", "c", "d", "e"}
	entries := rapid.IntRange(5, 60).Draw(t, "entries")
	for range entries {
		index++
		if rapid.IntRange(0, 15).Draw(t, "noop") == 0 {
			logs = append(logs, &raft.Log{Index: index, Type: raft.LogNoop})
			index++
		}
		switch rapid.IntRange(0, 9).Draw(t, "time shape") {
		case 0:
			now += rapid.Int64Range(int64(500*time.Millisecond), int64(3*time.Second)).Draw(t, "long step")
		case 1:
			now -= rapid.Int64Range(0, int64(time.Second)).Draw(t, "clock step back")
		default:
			now += rapid.Int64Range(0, int64(200*time.Millisecond)).Draw(t, "step")
		}
		e := batch.Entry{Time: now}
		for range rapid.IntRange(1, 12).Draw(t, "items") {
			c := rapid.IntRange(0, 99).Draw(t, "item kind")
			switch {
			case c < 8 || opened == 0:
				e.Items = append(e.Items, batch.Item{Kind: batch.KindOpenSession})
				opened++
				model[uint64(opened)] = &sessionModel{next: 1}
				continue
			case c < 11:
				id := uint64(rapid.IntRange(1, opened+1).Draw(t, "close"))
				e.Items = append(e.Items, batch.Item{Kind: batch.KindCloseSession, Session: id})
				continue
			case c < 15:
				e.Items = append(e.Items, batch.Item{Kind: batch.KindHashCheck})
				continue
			}
			id := uint64(rapid.IntRange(0, opened+1).Draw(t, "session"))
			m := model[id]
			if m == nil {
				m = &sessionModel{next: 1}
			}
			var seq uint64
			switch s := rapid.IntRange(0, 19).Draw(t, "seq shape"); {
			case s < 11 || m.next == 1:
				seq = m.next
				m.next++
			case s < 17: // a retry of a recent one, or of an acknowledged one
				seq = rapid.Uint64Range(max(1, min(m.ack, m.next-1)), m.next-1).Draw(t, "retry")
			case s < 18: // past the window
				seq = m.next + 8 + rapid.Uint64Range(0, 3).Draw(t, "ahead")
			default:
				seq = rapid.Uint64Range(1, m.next).Draw(t, "any seq")
			}
			switch a := rapid.IntRange(0, 9).Draw(t, "ack shape"); {
			case a < 5:
			case a < 9:
				if m.ack+1 < m.next {
					m.ack = rapid.Uint64Range(m.ack, m.next-1).Draw(t, "ack")
				}
			default:
				m.ack += rapid.Uint64Range(0, 12).Draw(t, "ack jump")
			}
			key := rapid.SampledFrom(keys).Draw(t, "key")
			pad := rapid.IntRange(0, 40).Draw(t, "pad")
			fail := rapid.IntRange(0, 9).Draw(t, "fail") == 0
			e.Items = append(e.Items, stepItem(propParts, key, id, seq, m.ack, pad, fail))
		}
		logs = append(logs, commandLog(index, &e))
	}
	return logs
}

// groupings returns ways to cut n entries into ApplyBatch calls: one per call, all in one,
// and a generated cut.
func groupings(t *rapid.T, n int) map[string][]int {
	one := make([]int, n)
	for i := range one {
		one[i] = 1
	}
	var cut []int
	for left := n; left > 0; {
		k := rapid.IntRange(1, left).Draw(t, "group")
		cut = append(cut, k)
		left -= k
	}
	return map[string][]int{"one per call": one, "all in one": {n}, "generated": cut}
}

// applyGrouped applies logs to a new FSM in groups of the given sizes and returns the
// FSM and every item's outcome.
func applyGrouped(t *rapid.T, cfg Config, logs []*raft.Log, groups []int) (*FSM, [][]itemOutcome) {
	f := newTestFSM(t, cfg)
	return f, applyGroups(f, logs, groups)
}

// applyGroups applies logs to f in groups of the given sizes and returns every item's
// outcome.
func applyGroups(f *FSM, logs []*raft.Log, groups []int) [][]itemOutcome {
	var out []interface{}
	for _, g := range groups {
		out = append(out, f.ApplyBatch(logs[:g])...)
		logs = logs[g:]
	}
	return outcomesOf(out)
}

func TestSessionTableIndependentOfApplyGrouping(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxCached := 0
		if rapid.Bool().Draw(t, "small result cache") {
			maxCached = rapid.IntRange(1, 200).Draw(t, "max cached bytes")
		}
		cfg := propConfig(maxCached)
		logs := genSessionLog(t)
		var (
			refName string
			ref     *FSM
			refOut  [][]itemOutcome
		)
		for name, groups := range groupings(t, len(logs)) {
			f, out := applyGrouped(t, cfg, logs, groups)
			defer f.Close()
			if ref == nil {
				refName, ref, refOut = name, f, out
				continue
			}
			for i := range out {
				for j := range out[i] {
					if out[i][j] != refOut[i][j] {
						t.Fatalf("entry %d item %d: %s gives %+v, %s gives %+v", logs[i].Index, j, name, out[i][j], refName, refOut[i][j])
					}
				}
			}
			if got, want := dumpMeta(f), dumpMeta(ref); got != want {
				t.Fatalf("session tables differ:\n%s:\n%s\n%s:\n%s", name, got, refName, want)
			}
			if got, want := fmt.Sprint(f.HashRecords()), fmt.Sprint(ref.HashRecords()); got != want {
				t.Fatalf("hash records differ:\n%s: %s\n%s: %s", name, got, refName, want)
			}
			if got, want := f.metaHash(), ref.metaHash(); got != want {
				t.Fatalf("meta hashes differ: %s %x, %s %x", name, got, refName, want)
			}
			if got, want := fmt.Sprint(f.eng.Hashes()), fmt.Sprint(ref.eng.Hashes()); got != want {
				t.Fatalf("partition hashes differ: %s %s, %s %s", name, got, refName, want)
			}
		}
		// A replica restored from a snapshot holds the same table.
		g := snapshotRoundTrip(t, ref, cfg)
		defer g.Close()
		if got, want := dumpMeta(g), dumpMeta(ref); got != want {
			t.Fatalf("restored session table differs:\n%s\nwant\n%s", got, want)
		}
		if got, want := g.metaHash(), ref.metaHash(); got != want {
			t.Fatalf("restored meta hash %x, want %x", got, want)
		}
		// The restored replica goes on like the original.
		more := genSessionLog(t)
		for _, l := range more {
			l.Index += logs[len(logs)-1].Index
		}
		ref.ApplyBatch(more)
		g.ApplyBatch(more)
		if got, want := dumpMeta(g), dumpMeta(ref); got != want {
			t.Fatalf("restored replica's session table after more entries:\n%s\nwant\n%s", got, want)
		}
		if got, want := fmt.Sprint(g.HashRecords()), fmt.Sprint(ref.HashRecords()); got != want {
			t.Fatalf("restored replica's hash records after more entries:\n%s\nwant\n%s", got, want)
		}
	})
}
