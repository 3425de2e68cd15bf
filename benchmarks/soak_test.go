package benchmarks

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/replica"
)

// BenchmarkSoakHeap drives a 3-node cluster for LOCKSTEP_SOAK_SECONDS (default 60; the
// issue's check is 600) under the conditions that once made the session tables leak, and
// checks that the heap levels off and that every replica ends with the same session table:
//
//   - 512 requests in flight from 8 Go clients, which acknowledge each result as it
//     arrives;
//   - one lazy client (lazyAcker) with 32 in flight, whose acknowledgements trail its
//     answers by 4,000 seqs: its session always holds about 4,000 cached results;
//   - a follower killed at 30 % of the run and restarted at 35 %: it replays its log and
//     catches up from the leader in large applies, grouping entries differently from the
//     replicas that kept up.
//
// Every 10 % of the run it samples the heap in use after a GC and each node's session
// table (FSM.SessionStats, at its latest hash check) and snapshot metadata size; with
// LOCKSTEP_SOAK_PROFILES set to a directory, it also writes a heap profile there at each
// sample (heap-PP.pprof, PP the percentage of the run), to compare with pprof -diff_base. Nodes,
// clients and load share this process, so the heap figure is every node's together. After
// the load, it waits for the replicas to converge and for a final hash check, and fails
// unless every node recorded the same partition hashes and meta hash (the session table
// among it) at every hash check they share, none is divergent, and their session stats
// agree.
func BenchmarkSoakHeap(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	d := 60 * time.Second
	if s, err := strconv.Atoi(os.Getenv("LOCKSTEP_SOAK_SECONDS")); err == nil && s > 0 {
		d = time.Duration(s) * time.Second
	}
	const lazyWorkers, lazyLag = 32, 4000 // 4,032 ≤ the default SessionWindow of 4,096
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := node.Config{Logger: quiet}
	cfg.Sequencer.SnapshotThreshold = 8192 // as `lockstep node` runs by default
	dir := b.TempDir()
	c, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 3, Dir: dir, Node: cfg})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapInuse) / (1 << 20)
	}

	lazyCtx, stopLazy := context.WithCancel(ctx)
	defer stopLazy()
	lazy := newLazyAcker(c.ClientAddrs(), c.ClientConfig().TLS, lazyWorkers, lazyLag)
	lazyDone := make(chan error, 1)
	go func() { lazyDone <- lazy.run(lazyCtx) }()
	done := make(chan Report, 1)
	go func() {
		r, err := Run(ctx, c.ClientAddrs(), Load{Clients: 8, Inflight: 512, Duration: d, Op: CounterAdd, TLS: c.ClientConfig().TLS})
		if err != nil {
			b.Error(err)
		}
		done <- r
	}()

	// This goroutine alone stops and starts nodes and reads c.Nodes.
	start := time.Now()
	tick := time.NewTicker(d / 20)
	defer tick.Stop()
	var poll <-chan time.Time // while the restarted follower catches up
	var samples []float64
	follower, catchUpTo := -1, uint64(0)
	var restarted time.Time
	var catchUp time.Duration
	for n := 1; n < 20; {
		select {
		case <-poll:
			if c.Nodes[follower].FSM().Applied() < catchUpTo {
				continue
			}
			catchUp, poll = time.Since(restarted), nil
			entries, applies := applyCounts(c.Nodes[follower])
			logf("%s: %s caught up to index %d in %s: %.0f entries in %.0f applies (%.1f entries per apply)",
				since(start), c.Nodes[follower].ID(), catchUpTo, catchUp.Round(time.Millisecond), entries, applies, entries/applies)
			continue
		case <-tick.C:
		}
		switch n {
		case 6:
			l, err := c.WaitLeader(ctx)
			if err != nil {
				b.Fatal(err)
			}
			follower = (l + 1) % len(c.Nodes)
			st := c.Nodes[follower].Sequencer().Stats()
			logf("%s: killing follower %s at applied index %d", since(start), c.Nodes[follower].ID(), st.AppliedIndex)
			c.Kill(follower)
		case 7:
			l, err := c.WaitLeader(ctx)
			if err != nil {
				b.Fatal(err)
			}
			catchUpTo = c.Nodes[l].FSM().Applied()
			if err := c.Restart(follower); err != nil {
				b.Fatal(err)
			}
			restarted = time.Now()
			p := time.NewTicker(50 * time.Millisecond)
			defer p.Stop()
			poll = p.C
			logf("%s: restarted %s; the leader is at index %d", since(start), c.Nodes[follower].ID(), catchUpTo)
		}
		if n%2 == 0 {
			samples = append(samples, heap())
			if dir := os.Getenv("LOCKSTEP_SOAK_PROFILES"); dir != "" {
				writeHeapProfile(b, filepath.Join(dir, fmt.Sprintf("heap-%02d.pprof", n*5)))
			}
			logf("%s: heap in use %.1f MiB; %s; %s", since(start), samples[len(samples)-1], tables(c, dir), lazy)
		}
		n++
	}
	r := <-done
	stopLazy()
	if err := <-lazyDone; err != nil {
		b.Error(err)
	}
	logf("load: %s", r)
	logf("%s", lazy)
	if poll != nil {
		b.Errorf("%s did not catch up to index %d during the run", c.Nodes[follower].ID(), catchUpTo)
	}

	final := checkTables(b, c)
	logf("after the load: heap in use %.1f MiB; %s", heap(), tables(c, dir))
	logf("final hash check at index %d: every node equal; session table %+v", final.Index, final)
	logf("heap samples (MiB, every 10%% of the run): %s", floats(samples))
	b.ReportMetric(samples[0], "heap-first-MiB")
	b.ReportMetric(samples[len(samples)-1], "heap-last-MiB")
	b.ReportMetric(slices.Max(samples), "heap-max-MiB")
	b.ReportMetric(r.Throughput(), "inputs/s")
	b.ReportMetric(float64(lazy.ops.Load())/r.Elapsed.Seconds(), "lazy-inputs/s")
	b.ReportMetric(float64(lazy.refusedCount()), "lazy-refused")
	b.ReportMetric(catchUp.Seconds(), "catch-up-s")
}

// checkTables waits until the replicas have applied the same log and each made a hash
// check at its end, then checks that every hash check they share has the same partition
// hashes and meta hash on every node, that none is divergent, and that their session
// stats agree. It returns the stats.
func checkTables(b *testing.B, c *node.LocalCluster) replica.SessionStats {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.WaitConverged(ctx); err != nil {
		b.Fatal(err)
	}
	// The leader adds a hash check once the log is idle; wait until every node has
	// recorded it as its last entry.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !checkedAtEnd(c) {
		select {
		case <-ctx.Done():
			b.Fatalf("no final hash check on every node: %v", ctx.Err())
		case <-tick.C:
		}
	}
	byIndex := map[uint64]replica.HashRecord{}
	shared := 0
	var stats replica.SessionStats
	for i, n := range c.Nodes {
		if err := n.FSM().Divergent(); err != nil {
			b.Errorf("%s: %v", n.ID(), err)
		}
		for _, r := range n.FSM().HashRecords() {
			first, ok := byIndex[r.Index]
			if !ok {
				byIndex[r.Index] = r
				continue
			}
			shared++
			if !slices.Equal(first.Hashes, r.Hashes) || first.Meta != r.Meta {
				b.Errorf("%s at index %d: hashes %x meta %x, another node %x meta %x", n.ID(), r.Index, r.Hashes, r.Meta, first.Hashes, first.Meta)
			}
		}
		st := n.FSM().SessionStats()
		if i == 0 {
			stats = st
		} else if st != stats {
			b.Errorf("%s: session stats %+v, %s's %+v", n.ID(), st, c.Nodes[0].ID(), stats)
		}
	}
	logf("hash checks compared: %d positions, %d comparisons between nodes", len(byIndex), shared)
	return stats
}

// checkedAtEnd reports whether every node has applied the same index and recorded a
// hash check there.
func checkedAtEnd(c *node.LocalCluster) bool {
	var at uint64
	for _, n := range c.Nodes {
		recs := n.FSM().HashRecords()
		if len(recs) == 0 || recs[len(recs)-1].Index != n.FSM().Applied() {
			return false
		}
		if at != 0 && recs[len(recs)-1].Index != at {
			return false
		}
		at = recs[len(recs)-1].Index
	}
	return true
}

// tables describes each node's session table and latest snapshot's metadata.
func tables(c *node.LocalCluster, dir string) string {
	var parts []string
	for i, n := range c.Nodes {
		id := fmt.Sprintf("n%d", i+1)
		if n == nil {
			parts = append(parts, id+" down")
			continue
		}
		role := "follower"
		if i == c.Leader() {
			role = "leader"
		}
		st := n.FSM().SessionStats()
		s := fmt.Sprintf("%s %s @%d: %d sessions, %d results (%d B, at most %d in one)",
			id, role, st.Index, st.Sessions, st.Results, st.ResultBytes, st.MaxSessionResults)
		if at, size, err := snapshotMetaBytes(filepath.Join(dir, id, "snapshots")); err == nil {
			s += fmt.Sprintf(", snapshot @%d meta %d B", at, size)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// snapshotMetaBytes returns the index and the metadata length of the newest snapshot in
// a raft.FileSnapshotStore directory: the state.bin of a replica snapshot starts with the
// uvarint length of its metadata (the session table, cluster and node info, hash records).
func snapshotMetaBytes(dir string) (index, size uint64, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	newest := ""
	for _, e := range ents {
		// Snapshot directories are named term-index-millis; ".tmp" ones are unfinished.
		f := strings.Split(e.Name(), "-")
		if len(f) != 3 || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		if i, err := strconv.ParseUint(f[1], 10, 64); err == nil && i > index {
			index, newest = i, e.Name()
		}
	}
	if newest == "" {
		return 0, 0, os.ErrNotExist
	}
	fh, err := os.Open(filepath.Join(dir, newest, "state.bin"))
	if err != nil {
		return 0, 0, err // raft reaped it just now
	}
	defer fh.Close()
	size, err = binary.ReadUvarint(bufio.NewReader(fh))
	return index, size, err
}

// applyCounts returns the log entries the node's FSM applied since it started and the
// applies (ApplyBatch calls) they took, from its metrics.
func applyCounts(n *node.Node) (entries, applies float64) {
	mfs, err := n.Metrics().Registry.Gather()
	if err != nil {
		return 0, 0
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "lockstep_log_entries_applied_total":
			entries = mf.GetMetric()[0].GetCounter().GetValue()
		case "lockstep_apply_seconds":
			applies = float64(mf.GetMetric()[0].GetHistogram().GetSampleCount())
		}
	}
	return entries, applies
}

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// logf prints one line of the soak's record to stdout: testing keeps only the first ten
// lines a benchmark logs.
func logf(format string, args ...any) { fmt.Printf("soak: "+format+"\n", args...) }

func since(t time.Time) string { return time.Since(t).Round(time.Second).String() }

func floats(v []float64) string {
	s := make([]string, len(v))
	for i, f := range v {
		s[i] = strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strings.Join(s, ", ")
}
