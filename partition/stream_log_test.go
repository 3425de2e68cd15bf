package partition

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestEntryLogModel checks entryLog against a plain slice over random pushes, truncations
// and front drops that cross chunk boundaries, and that a view keeps exactly what the log
// held when it was taken while the log goes on (the rule a Snapshot relies on: truncation
// never reaches below a view's length).
func TestEntryLogModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var l entryLog
	var model []entry // model[i] is entry i of l
	type view struct {
		v    entryLog
		want []entry
	}
	var views []view
	floor := 0 // truncation may not go below the newest view's length
	next := uint64(0)
	check := func(step int) {
		t.Helper()
		if l.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, l.len(), len(model))
		}
		for i := range model {
			if !sameEntry(l.at(i), &model[i]) {
				t.Fatalf("step %d: entry %d = %+v, want %+v", step, i, *l.at(i), model[i])
			}
		}
		for c := 0; c+1 < len(l.chunks); c++ {
			if len(l.chunks[c]) != chunkEntries {
				t.Fatalf("step %d: chunk %d of %d holds %d entries, want %d", step, c, len(l.chunks), len(l.chunks[c]), chunkEntries)
			}
		}
	}
	for step := range 400 {
		switch op := rng.IntN(10); {
		case op < 5:
			for range rng.IntN(1500) {
				k := fmt.Appendf(nil, "k%d", next)
				e := entry{off: next, time: int64(next), rec: k, klen: uint32(len(k))}
				next++
				l.push(e)
				model = append(model, e)
			}
		case op < 7 && len(model) > floor:
			m := floor + rng.IntN(len(model)-floor+1)
			l.truncate(m)
			model = model[:m]
		case op < 8:
			if k := rng.IntN(len(model)>>chunkShift + 1); k > 0 {
				l.dropFront(k)
				model = model[k<<chunkShift:]
				floor = max(0, floor-k<<chunkShift)
			}
		default:
			views = append(views, view{v: l.view(), want: append([]entry(nil), model...)})
			floor = len(model)
		}
		check(step)
	}
	for i, v := range views {
		if v.v.len() != len(v.want) {
			t.Fatalf("view %d: len %d, want %d", i, v.v.len(), len(v.want))
		}
		for j := range v.want {
			if !sameEntry(v.v.at(j), &v.want[j]) {
				t.Fatalf("view %d: entry %d = %+v, want %+v: the log changed what a view holds", i, j, *v.v.at(j), v.want[j])
			}
		}
	}
	if len(views) < 10 {
		t.Fatalf("only %d views taken", len(views))
	}
}

func sameEntry(a, b *entry) bool {
	return a.off == b.off && a.time == b.time && a.dead == b.dead && a.klen == b.klen && bytes.Equal(a.rec, b.rec)
}

// chunkProcs are "create" (as streamProcs) and "appendN" (Args "from count [fail]"):
// appends records k<i>=v<i> for i in [from, from+count) to stream s, then fails if asked.
func chunkProcs() procs {
	return procs{
		"create": streamProcs()["create"],
		"appendN": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			var from, n int
			var fail string
			fmt.Sscan(string(in.Args), &from, &n, &fail)
			for i := from; i < from+n; i++ {
				if _, err := tx.Append("s", fmt.Appendf(nil, "k%d", i%97), fmt.Appendf(nil, "v%d", i), int64(i)); err != nil {
					return out, err
				}
			}
			if fail != "" {
				return out, errHandler
			}
			return out, nil
		},
	}
}

// TestStreamAcrossChunks drives streams of thousands of records, so that appends, failed
// inputs (rolled back across a chunk boundary), retention (dropping whole chunks) and
// compaction cross the entry log's chunks, with a snapshot taken in the middle: reads,
// hashes and the restored snapshot must be what they are for a stream in one slice.
func TestStreamAcrossChunks(t *testing.T) {
	for _, tc := range []struct {
		name                string
		maxRecords, maxByte int64
		compact             bool
	}{
		{"unbounded", 0, 0, false},
		{"max 2500 records", 2500, 0, false},
		{"max 9000 bytes", 0, 9000, false},
		{"compacted, max 3000", 3000, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, Config{Partitions: 1}, chunkProcs())
			exec(e, Input{Procedure: "create", Scope: []int{0}, Args: createArgs(tc.maxRecords, tc.maxByte, 0, tc.compact)})
			// The model: every record ever appended, by offset, and which are live.
			type rec struct {
				key, value string
				live       bool
			}
			var all []rec
			var bytesLive int64
			latest := map[string]int{}
			apply := func(from, n int) {
				for i := from; i < from+n; i++ {
					r := rec{key: fmt.Sprintf("k%d", i%97), value: fmt.Sprintf("v%d", i), live: true}
					if j, ok := latest[r.key]; ok && tc.compact {
						all[j].live = false
						bytesLive -= int64(len(all[j].key) + len(all[j].value))
					}
					latest[r.key] = len(all)
					all = append(all, r)
					bytesLive += int64(len(r.key) + len(r.value))
				}
				// Retention from the front while a bound is exceeded.
				live := 0
				for _, r := range all {
					if r.live {
						live++
					}
				}
				for j := range all {
					if !((tc.maxRecords > 0 && int64(live) > tc.maxRecords) || (tc.maxByte > 0 && bytesLive > tc.maxByte)) {
						break
					}
					if all[j].live {
						all[j].live = false
						live--
						bytesLive -= int64(len(all[j].key) + len(all[j].value))
						delete(latest, all[j].key)
					}
				}
			}
			want := func() string {
				var b strings.Builder
				for off, r := range all {
					if r.live {
						fmt.Fprintf(&b, " %d:%s=%s@%d", off, r.key, r.value, off)
					}
				}
				return b.String()
			}
			got := func(e *Engine) string {
				s := readAll(t, e)
				_, recs, _ := strings.Cut(s, ":")
				return recs
			}
			var snap *Snapshot
			var atSnap string
			n := 0
			for round := range 14 {
				count := 700 + 300*(round%3)
				if res := run1(e, Input{Procedure: "appendN", Args: fmt.Appendf(nil, "%d %d", n, count)}); res.Err != "" {
					t.Fatal(res.Err)
				}
				apply(n, count)
				n += count
				// A failed input appends 1,500 records across a chunk boundary: all undone.
				if err := runErr(e, Input{Procedure: "appendN", Args: fmt.Appendf(nil, "%d 1500 fail", n)}); err == nil {
					t.Fatal("appendN fail succeeded")
				}
				if g, w := got(e), want(); g != w {
					t.Fatalf("round %d: stream holds\n%.400s\nwant\n%.400s", round, g, w)
				}
				checkHashes(t, e)
				if round == 6 {
					snap, atSnap = e.Snapshot(), want()
				}
			}
			var buf bytes.Buffer
			if _, err := snap.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			r := newEngine(t, Config{Partitions: 1}, chunkProcs())
			if err := r.Restore(&buf); err != nil {
				t.Fatal(err)
			}
			if g := got(r); g != atSnap {
				t.Fatalf("snapshot of round 6 restores\n%.400s\nwant\n%.400s", g, atSnap)
			}
			checkHashes(t, r)
		})
	}
}
