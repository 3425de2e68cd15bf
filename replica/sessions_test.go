package replica

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/vmihailenco/msgpack/v5"
)

// sessionTestConfig is a Config for FSM-level session tests.
func sessionTestConfig() Config {
	return Config{Partitions: propParts, Sequential: true, HashHistory: 16}
}

// openSessions applies an entry opening n sessions at index and returns the next index.
func openSessions(t *testing.T, f *FSM, index uint64, n int) uint64 {
	t.Helper()
	e := batch.Entry{Time: 1e12}
	for range n {
		e.Items = append(e.Items, batch.Item{Kind: batch.KindOpenSession})
	}
	res := f.ApplyBatch([]*raft.Log{commandLog(index, &e)})[0].(*batch.Results)
	for i, r := range res.Items {
		if r.Err != nil || r.Session == 0 {
			t.Fatalf("#%d: open session: %v", i, r.Err)
		}
	}
	return index + 1
}

// TestAckFreesEverythingBelow: acknowledging frees every cached result up to the
// acknowledged seq, whichever way ack walks (the range or the map), and a result computed
// after its acknowledgement is not cached (DESIGN.md section 5: no unreachable results).
func TestAckFreesEverythingBelow(t *testing.T) {
	for i, tc := range []struct {
		cached  []uint64
		through uint64
		want    []uint64
	}{
		{[]uint64{1, 2, 3}, 2, []uint64{3}},
		{[]uint64{1, 2, 3}, 1000, nil},         // far jump: walks the map
		{[]uint64{5, 900}, 899, []uint64{900}}, // sparse
		{[]uint64{1, 2, 3, 4, 5}, 3, []uint64{4, 5}},
	} {
		ss := &session{Results: map[uint64]cachedResult{}}
		for _, seq := range tc.cached {
			ss.cache(seq, cachedResult{Value: []byte("ab")})
		}
		ss.ack(tc.through)
		ss.cache(tc.through, cachedResult{Value: []byte("late")}) // acknowledged already
		var got []uint64
		for seq := range ss.Results {
			got = append(got, seq)
		}
		if fmt.Sprint(sortedU64(got)) != fmt.Sprint(tc.want) {
			t.Errorf("#%d: got %v, want %v", i, sortedU64(got), tc.want)
		}
		if ss.cachedBytes != 2*len(tc.want) {
			t.Errorf("#%d: got %d cached bytes, want %d", i, ss.cachedBytes, 2*len(tc.want))
		}
	}
}

func sortedU64(s []uint64) []uint64 {
	slices.Sort(s)
	return s
}

func mustMsgpack(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSessionCacheBound: a session's cached result bytes reach MaxCachedResultBytes at the
// same log position however entries are grouped; the request past it is refused before it
// runs, with ErrSessionCacheFull as the wire code Overloaded, and gets in once a retry
// acknowledges results (DESIGN.md section 5, invariant 3).
func TestSessionCacheBound(t *testing.T) {
	cfg := sessionTestConfig()
	cfg.MaxCachedResultBytes = 100
	// Each t.step result is 8 + pad bytes plus its msgpack header (2 bytes for pad < 248).
	const pad = 30 // 40 bytes a result
	var logs []*raft.Log
	index := uint64(2)
	add := func(items ...batch.Item) {
		logs = append(logs, commandLog(index, &batch.Entry{Time: 1e12 + int64(index), Items: items}))
		index++
	}
	// A pipelining client that never acknowledges: seqs 1..3 in one entry, 4 and 5 later.
	add(stepItem(propParts, "a", 1, 1, 0, pad, false), stepItem(propParts, "b", 1, 2, 0, pad, false), stepItem(propParts, "c", 1, 3, 0, pad, false))
	add(stepItem(propParts, "a", 1, 4, 0, pad, false)) // 120 cached bytes ≥ 100: refused
	add(stepItem(propParts, "a", 1, 3, 0, pad, false)) // a retry is answered from the cache
	add(stepItem(propParts, "a", 1, 4, 2, pad, false)) // acknowledges 1 and 2: runs
	add(stepItem(propParts, "a", 1, 5, 2, pad, false)) // 80 bytes cached (3, 4): runs
	add(stepItem(propParts, "a", 1, 6, 2, pad, false)) // 120 bytes: refused

	type want struct {
		entry, item int
		err         error // nil: ran
	}
	wants := []want{{0, 0, nil}, {0, 1, nil}, {0, 2, nil}, {1, 0, ErrSessionCacheFull}, {2, 0, nil}, {3, 0, nil}, {4, 0, nil}, {5, 0, ErrSessionCacheFull}}
	var ref string
	for _, split := range [][]int{{1, 1, 1, 1, 1, 1}, {6}, {2, 3, 1}} {
		f := newTestFSM(t, cfg)
		defer f.Close()
		openSessions(t, f, 1, 1)
		var out []interface{}
		rest := logs
		for _, n := range split {
			out = append(out, f.ApplyBatch(rest[:n])...)
			rest = rest[n:]
		}
		for i, w := range wants {
			r := out[w.entry].(*batch.Results).Items[w.item]
			switch {
			case w.err == nil && r.Err != nil:
				t.Fatalf("split %v #%d: got %v, want success", split, i, r.Err)
			case w.err != nil && !errors.Is(r.Err, w.err):
				t.Fatalf("split %v #%d: got %v, want %v", split, i, r.Err, w.err)
			case w.err != nil && CodeOf(r.Err) != CodeOverloaded:
				t.Fatalf("split %v #%d: outcome %v (%v), want Overloaded", split, i, CodeOf(r.Err), r.Err)
			}
		}
		// The refused seq 4 did not run: the retry that got in was key a's second run.
		if got := out[3].(*batch.Results).Items[0].Value; len(got) < 10 || got[9] != 2 {
			t.Fatalf("split %v: seq 4 result %x, want count 2 of key a", split, got)
		}
		if got := f.sess.byID[1].cachedBytes; got != 120 {
			t.Fatalf("split %v: got %d cached bytes, want 120", split, got)
		}
		if d := dumpMeta(f); ref == "" {
			ref = d
		} else if d != ref {
			t.Fatalf("split %v: session table\n%s\nwant\n%s", split, d, ref)
		}
	}
}

// TestMetaHashCoversState: a change to any part of the replicated state besides the
// partitions changes the meta hash (DESIGN.md invariant 6: replicas compare all of it).
func TestMetaHashCoversState(t *testing.T) {
	f := newTestFSM(t, sessionTestConfig())
	defer f.Close()
	openSessions(t, f, 1, 2)
	f.ApplyBatch([]*raft.Log{commandLog(2, &batch.Entry{Time: 1e12 + 1, Items: []batch.Item{
		stepItem(propParts, "a", 1, 1, 0, 3, false),
		stepItem(propParts, "a", 1, 2, 0, 3, true),
		{Kind: batch.KindInitCluster, Args: mustMsgpack(t, batch.ClusterInfo{ClusterID: "c", Partitions: propParts, Procedures: f.Fingerprint()})},
		{Kind: batch.KindNodeInfo, Args: mustMsgpack(t, batch.NodeInfo{ID: "n1", RaftAddr: "r", ClientAddr: "c"})},
	}})})
	ss := f.sess.byID[1]
	if len(ss.Results) != 2 {
		t.Fatalf("got %d cached results, want 2", len(ss.Results))
	}
	base := f.metaHash()
	if f.metaHash() != base {
		t.Fatal("meta hash is not stable")
	}
	for i, tc := range []struct {
		name   string
		mutate func()
	}{
		{"lastTime", func() { f.lastTime++ }},
		{"nextID", func() { f.sess.nextID++ }},
		{"sweepAt", func() { f.sess.sweepAt++ }},
		{"session closed", func() { delete(f.sess.byID, 2) }},
		{"LastActive", func() { ss.LastActive++ }},
		{"AckThrough", func() { ss.AckThrough++ }},
		{"result value", func() { ss.Results[1].Value[0]++ }},
		{"result code", func() { c := ss.Results[2]; c.Code++; ss.Results[2] = c }},
		{"result message", func() { c := ss.Results[2]; c.Message += "."; ss.Results[2] = c }},
		{"result seq", func() { ss.Results[7] = ss.Results[1]; delete(ss.Results, 1) }},
		{"cluster", func() { f.cluster.ClusterID = "d" }},
		{"node", func() { f.nodes["n1"] = batch.NodeInfo{ID: "n1", RaftAddr: "r2", ClientAddr: "c"} }},
		{"node removed", func() { delete(f.nodes, "n1") }},
	} {
		f.mu.Lock()
		tc.mutate()
		f.mu.Unlock()
		h := f.metaHash()
		if h == base {
			t.Errorf("#%d: changing %s leaves the meta hash %x", i, tc.name, h)
		}
		base = h
	}
}

// TestCompareHashesMetaOnly: a replica whose partition hashes agree with its peers' but
// whose meta hash differs from the majority's is marked divergent, and the error says it
// was the non-partition state; an unknown (0) meta hash neither accuses nor vouches
// (DESIGN.md invariant 6).
func TestCompareHashesMetaOnly(t *testing.T) {
	parts := []uint64{1, 2, 3}
	for i, tc := range []struct {
		peers     [][]HashRecord
		divergent bool
	}{
		{[][]HashRecord{{{Index: 5, Hashes: parts, Meta: 9}}, {{Index: 5, Hashes: parts, Meta: 9}}}, true},
		{[][]HashRecord{{{Index: 5, Hashes: parts, Meta: 7}}, {{Index: 5, Hashes: parts, Meta: 9}}}, false},
		{[][]HashRecord{{{Index: 5, Hashes: parts, Meta: 0}}, {{Index: 5, Hashes: parts, Meta: 0}}}, false},
		{[][]HashRecord{{{Index: 5, Hashes: parts, Meta: 7}}, {{Index: 5, Hashes: parts, Meta: 7}}}, false},
	} {
		f := newTestFSM(t, sessionTestConfig())
		f.hashes = []HashRecord{{Index: 5, Hashes: parts, Meta: 7}}
		err := f.CompareHashes(tc.peers)
		f.Close()
		if got := err != nil; got != tc.divergent {
			t.Fatalf("#%d: got divergent %t (%v), want %t", i, got, err, tc.divergent)
		}
		if !tc.divergent {
			continue
		}
		if !errors.Is(err, ErrDivergent) || !errors.Is(f.Divergent(), ErrDivergent) {
			t.Fatalf("#%d: got %v, want ErrDivergent recorded", i, err)
		}
		if !strings.Contains(err.Error(), "non-partition state") {
			t.Fatalf("#%d: error %q does not name the non-partition state", i, err)
		}
	}
}

// TestConfigMaxCachedResultBytes: the bound defaults and refuses a negative value.
func TestConfigMaxCachedResultBytes(t *testing.T) {
	if got := (Config{}).withDefaults().MaxCachedResultBytes; got != 16<<20 {
		t.Fatalf("default %d, want 16 MiB", got)
	}
	if err := (Config{MaxCachedResultBytes: -1}).Validate(); err == nil {
		t.Fatal("negative MaxCachedResultBytes accepted")
	}
}

// BenchmarkMetaHash measures the full recompute of the meta hash at a hash check with
// 10,000 sessions, each holding two cached results.
func BenchmarkMetaHash(b *testing.B) {
	f := newTestFSM(b, Config{Partitions: propParts, Sequential: true})
	defer f.Close()
	for id := uint64(1); id <= 10000; id++ {
		ss := &session{ID: id, LastActive: 1e12, AckThrough: 10, Results: map[uint64]cachedResult{}}
		ss.cache(11, cachedResult{Value: []byte("0123456789abcdef")})
		ss.cache(12, cachedResult{Code: CodeProcedureError, Message: "t.step: failed"})
		f.sess.byID[id] = ss
	}
	f.sess.nextID = 10001
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		f.metaHash()
	}
}

// TestOneHashRecordPerEntry: an entry with two hash checks and inputs between them gives
// one record, the first check's, on every replica; two records under one index with
// different hashes made peers count disagreements that were not there (DESIGN.md
// invariant 6: divergence is detected, and only divergence).
func TestOneHashRecordPerEntry(t *testing.T) {
	cfg := sessionTestConfig()
	f := newTestFSM(t, cfg)
	defer f.Close()
	e := &batch.Entry{Time: 1e9, Items: []batch.Item{
		stepItem(cfg.Partitions, "a", 0, 0, 0, 0, false),
		{Kind: batch.KindHashCheck},
		stepItem(cfg.Partitions, "a", 0, 0, 0, 0, false),
		{Kind: batch.KindHashCheck},
	}}
	f.ApplyBatch([]*raft.Log{commandLog(7, e)})
	recs := f.HashRecords()
	if len(recs) != 1 || recs[0].Index != 7 {
		t.Fatalf("got records %+v, want one at index 7", recs)
	}
	// A peer that applied the same entry vouches for this replica.
	g := newTestFSM(t, cfg)
	defer g.Close()
	g.ApplyBatch([]*raft.Log{commandLog(7, e)})
	if err := f.CompareHashes([][]HashRecord{g.HashRecords(), g.HashRecords()}); err != nil {
		t.Fatalf("equal replicas: %v", err)
	}
}
