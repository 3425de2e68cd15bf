package benchmarks

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/pgsink"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// BenchmarkSinkPostgres measures the PostgreSQL sink's throughput (issue 10: ≥ 30,000
// records/s into a local PostgreSQL). It fills a stream of 4 partitions on a 3-node
// in-process cluster (fsync on) with LOCKSTEP_SINK_BENCH_RECORDS records (default
// 200,000; 16-byte keys, 100-byte values), then times one exactly-once sink copying them
// all into a table of a local PostgreSQL, by a push subscription with a credit window of
// LOCKSTEP_SINK_BENCH_BATCH (default 4096) records per partition (pgtest: $LOCKSTEP_TEST_PG_DSN or a private
// server with default durability: fsync and synchronous_commit on). The clock stops when
// the stored offsets cover every record, that is when the last transaction committed.
func BenchmarkSinkPostgres(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	total, readBatch := 200_000, 4096
	if n, err := strconv.Atoi(os.Getenv("LOCKSTEP_SINK_BENCH_RECORDS")); err == nil && n > 0 {
		total = n
	}
	if n, err := strconv.Atoi(os.Getenv("LOCKSTEP_SINK_BENCH_BATCH")); err == nil && n > 0 {
		readBatch = n
	}
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 3, Dir: b.TempDir(), Node: node.Config{Logger: quiet}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	cfg := client.DefaultConfig()
	cfg.Addrs, cfg.TLS = c.ClientAddrs(), c.ClientConfig().TLS
	cfg.MaxRetries = -1
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "bench.sink"}); err != nil {
		b.Fatal(err)
	}
	fillStream(b, cl, "bench.sink", total)

	db := pgtest.New(b)
	db.Exec(b, fmt.Sprintf(pgsink.TableSchema, "events"))
	s, err := pgsink.Open(ctx, pgsink.Config{DSN: db.DSN, Table: "events", Stream: "bench.sink", Logger: quiet},
		&pgsink.SubscribeOrigin{Client: cl, Options: []client.SubscribeOption{client.WithCredit(readBatch, 0)}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	conn := db.Connect(b)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- s.Run(runCtx) }()
	for {
		var stored int64
		if err := conn.QueryRow(ctx, `SELECT coalesce(sum(next_offset), 0) FROM lockstep_sink_offsets`).Scan(&stored); err != nil {
			b.Fatal(err)
		}
		if stored >= int64(total) {
			break
		}
		select {
		case err := <-done:
			b.Fatalf("sink ended: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	took := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	var rows int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&rows); err != nil {
		b.Fatal(err)
	}
	if rows != int64(total) {
		b.Fatalf("%d rows, want %d", rows, total)
	}
	records, txs, _ := s.Stats()
	b.ReportMetric(float64(total)/took.Seconds(), "records/s")
	b.ReportMetric(float64(records)/float64(txs), "records/tx")
	b.Logf("%d records in %v: %.0f records/s, %d transactions (%.0f records each)", total, took.Round(time.Millisecond),
		float64(total)/took.Seconds(), txs, float64(records)/float64(txs))
}

// fillStream appends total records to stream, 8 appenders of 500-record batches.
func fillStream(b *testing.B, cl *client.Client, stream string, total int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	value := make([]byte, 100)
	const batch, workers = 500, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w * batch; i < total; i += workers * batch {
				recs := make([]client.StreamRecord, 0, batch)
				for j := i; j < min(i+batch, total); j++ {
					recs = append(recs, client.StreamRecord{Key: []byte(fmt.Sprintf("key-%012d", j)), Value: value})
				}
				if _, err := cl.AppendBatch(ctx, stream, recs); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
