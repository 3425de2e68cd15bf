package benchmarks

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// The two streams of the retention soak: one bounded by record count, one by bytes.
var retentionStreams = []builtin.StreamDefinition{
	{Name: "bench.retain.count", Retention: builtin.StreamRetention{MaxRecords: 10_000}},
	{Name: "bench.retain.bytes", Retention: builtin.StreamRetention{MaxBytes: 512 << 10}},
}

// BenchmarkRetentionSoak appends to bounded streams for LOCKSTEP_SOAK_SECONDS (default
// 60; the check is 600) on a 3-node in-process cluster (fsync on, a snapshot every
// 512 log entries) and checks that memory and snapshots level off: 128
// AppendBatch calls in flight over 4 connections, each of 100 records (100-byte values)
// whose keys fall into one partition, alternating between a stream of at most 10,000
// records per partition and one of at most 512 KiB per partition. Every 10 % of the run
// it samples the heap in use after a GC (every node, the clients and the load share this
// process), and on each node: both streams as that node's replica describes them (live
// records, bytes, first and next offset summed over partitions) and the size of its newest
// snapshot and of its Raft log store. It fails if the last sample's heap or a snapshot is more
// than twice the one at 20 % (after the streams filled up).
func BenchmarkRetentionSoak(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	d := 60 * time.Second
	if s, err := strconv.Atoi(os.Getenv("LOCKSTEP_SOAK_SECONDS")); err == nil && s > 0 {
		d = time.Duration(s) * time.Second
	}
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := node.Config{Logger: quiet}
	// Entries of this load are ~0.8 MB and come 12-30 a second, so `lockstep node`'s
	// SnapshotThreshold of 8192 would snapshot every 5-10 minutes, and its TrailingLogs of
	// 10240 would keep ~8 GB of log per node: snapshot every 512 entries, keep 512.
	cfg.Sequencer.SnapshotThreshold = 512
	cfg.Sequencer.TrailingLogs = 512
	dir := b.TempDir()
	c, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 3, Dir: dir, Node: cfg})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	cl, err := client.Dial(ctx, c.ClientConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	for _, s := range retentionStreams {
		if err := cl.Streams().Create(ctx, s); err != nil {
			b.Fatal(err)
		}
	}

	const inflight = 128
	keys := newAppendKeyPool()
	value := make([]byte, appendValueBytes)
	bufs := make([][]client.StreamRecord, inflight)
	calls := make([]int, inflight)
	op := func(ctx context.Context, c *client.Client, w int, rng *rand.Rand) error {
		if bufs[w] == nil {
			bufs[w] = make([]client.StreamRecord, appendBatchSize)
		}
		pool := keys.byPart[(w+calls[w])%appendPartitions]
		stream := retentionStreams[calls[w]%len(retentionStreams)].Name
		calls[w]++
		for i := range bufs[w] {
			bufs[w][i] = client.StreamRecord{Key: []byte(pool[rng.IntN(len(pool))]), Value: value}
		}
		_, err := c.AppendBatch(ctx, stream, bufs[w])
		return err
	}
	done := make(chan Report, 1)
	go func() {
		r, err := Run(ctx, c.ClientAddrs(), Load{Clients: 4, Inflight: inflight, Duration: d, Op: op, TLS: c.ClientConfig().TLS})
		if err != nil {
			b.Error(err)
		}
		done <- r
	}()

	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapInuse) / (1 << 20)
	}
	start := time.Now()
	tick := time.NewTicker(d / 10)
	defer tick.Stop()
	var heaps []float64
	snaps := make([][]int64, len(c.Nodes)) // per node, newest snapshot size at each sample
	for n := 1; n <= 9; n++ {
		<-tick.C
		heaps = append(heaps, heap())
		var parts []string
		for i, nd := range c.Nodes {
			id := fmt.Sprintf("n%d", i+1)
			idx, snap := newestSnapshot(filepath.Join(dir, id, "snapshots"))
			snaps[i] = append(snaps[i], snap)
			dbSize := logStoreBytes(filepath.Join(dir, id))
			s := fmt.Sprintf("%s @%d: snapshot @%d %.2f MB, log store %.1f MB", id, nd.FSM().Applied(), idx, mb(snap), mb(dbSize))
			for _, def := range retentionStreams {
				s += "; " + describeLocal(nd, def.Name)
			}
			parts = append(parts, s)
		}
		logf("retention %d%% (%s): heap in use %.1f MiB\n  %s", n*10, since(start), heaps[len(heaps)-1], strings.Join(parts, "\n  "))
	}
	r := <-done
	logf("retention load: %s (%.0f records/s)", r, r.Throughput()*appendBatchSize)
	logf("retention heap samples (MiB, 10%%..90%%): %s", floats(heaps))
	for i := range snaps {
		logf("retention n%d snapshot samples (MB): %s", i+1, floats(mbs(snaps[i])))
	}
	b.ReportMetric(r.Throughput()*appendBatchSize, "records/s")
	b.ReportMetric(heaps[1], "heap-20%-MiB")
	b.ReportMetric(heaps[len(heaps)-1], "heap-last-MiB")
	b.ReportMetric(slices.Max(heaps), "heap-max-MiB")
	b.ReportMetric(float64(r.Errors), "errors")
	if heaps[len(heaps)-1] > 2*heaps[1] {
		b.Errorf("heap grew from %.1f MiB at 20%% to %.1f MiB", heaps[1], heaps[len(heaps)-1])
	}
	for i, s := range snaps {
		if s[1] > 0 && s[len(s)-1] > 2*s[1] {
			b.Errorf("n%d: snapshot grew from %d B at 20%% to %d B", i+1, s[1], s[len(s)-1])
		}
	}
}

// describeLocal describes stream on nd's own replica (a read-only stream.describe query on
// the state it has applied), summed over partitions.
func describeLocal(nd *node.Node, stream string) string {
	args, err := msgpack.Marshal(builtin.StreamNameArgs{Name: stream})
	if err != nil {
		return err.Error()
	}
	res := nd.FSM().Query(&partition.Input{Procedure: builtin.StreamDescribe, Args: args,
		Scope: partition.AllPartitions(nd.FSM().Partitions())})
	if res.Err != nil {
		return fmt.Sprintf("%s: %v", stream, res.Err)
	}
	var desc builtin.StreamDescription
	if err := msgpack.Unmarshal(res.Value, &desc); err != nil {
		return fmt.Sprintf("%s: %v", stream, err)
	}
	var recs, bytes int64
	var first, next uint64
	for _, p := range desc.Partitions {
		recs += p.Records
		bytes += p.Bytes
		first += p.FirstOffset
		next += p.NextOffset
	}
	return fmt.Sprintf("%s %d records %.2f MB, offsets %d..%d (sums over %d partitions)", stream, recs, mb(bytes), first, next, len(desc.Partitions))
}

// newestSnapshot returns the index and the size of the state of the newest snapshot in a
// raft.FileSnapshotStore directory, zeros if there is none.
func newestSnapshot(dir string) (index uint64, size int64) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0
	}
	for _, e := range ents {
		// Snapshot directories are named term-index-millis; ".tmp" ones are unfinished.
		f := strings.Split(e.Name(), "-")
		if len(f) != 3 || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		i, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil || i <= index {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, e.Name(), "state.bin")); err == nil {
			index, size = i, st.Size()
		}
	}
	return index, size
}

func mb(n int64) float64 { return float64(n) / 1e6 }

func mbs(v []int64) []float64 {
	out := make([]float64, len(v))
	for i, n := range v {
		out[i] = mb(n)
	}
	return out
}

// logStoreBytes returns the bytes on disk of the Raft log store in a node's data dir:
// raft.db (bolt) or the files of wal/ (raft-wal, whose segments are preallocated).
func logStoreBytes(dataDir string) int64 {
	var n int64
	if fi, err := os.Stat(filepath.Join(dataDir, "raft.db")); err == nil {
		n += fi.Size()
	}
	entries, _ := os.ReadDir(filepath.Join(dataDir, "wal"))
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}
