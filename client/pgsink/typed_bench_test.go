package pgsink_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/pgsink"
	"github.com/lockstepdb/lockstep/internal/testutil/pgtest"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// BenchmarkTypedUpsert measures the upsert mode's rows per second into a local
// PostgreSQL: b.N records (at least 200,000) of a four-column stream over b.N/2 keys (so
// half the rows replace one), 8 partitions, delivered from memory in batches of 4096
// records (the CLI's default credit of one partition) or 16384, each batch one
// transaction with its offsets and epoch check.
//
//	go test -run '^$' -bench BenchmarkTypedUpsert -benchtime 1x ./client/pgsink/
func BenchmarkTypedUpsert(b *testing.B) {
	for _, batch := range []int{4096, 16384} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchTypedUpsert(b, batch) })
	}
}

func benchTypedUpsert(b *testing.B, batch int) {
	const script = `CREATE STREAM s (id bigint, name text, score double, at timestamp) WITH (key = 'id', event_time = 'at')`
	s := compileSchema(b, script, "s")
	n := max(b.N, 200_000)
	const parts = 8
	recs := make([][]client.Record, parts)
	for i := 0; i < n; i++ {
		id := int64(i % (n / 2))
		row := []any{id, fmt.Sprintf("name-%d", i), float64(i) / 3, int64(1_700_000_000_000 + i)}
		v, err := s.EncodeRow(row)
		if err != nil {
			b.Fatal(err)
		}
		p := int(id % parts)
		recs[p] = append(recs[p], client.Record{Partition: p, Offset: uint64(len(recs[p])), Key: plan.KeyBytes(id), Data: v, EventTime: time.UnixMilli(row[3].(int64))})
	}
	db := pgtest.New(b)
	origin := &sliceOrigin{stream: "s", parts: recs, batch: batch, drained: make(chan struct{})}
	cfg := pgsink.Config{DSN: db.DSN, Table: "typed", Stream: "s", Rows: &pgsink.Rows{Schema: s, Mode: pgsink.ModeUpsert},
		Logger: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sk, err := pgsink.Open(ctx, cfg, origin)
	if err != nil {
		b.Fatal(err)
	}
	defer sk.Close()
	done := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- sk.Run(ctx) }()
	select {
	case <-origin.drained: // every batch written: the source is asked for more
	case err := <-done:
		b.Fatalf("Run: %v", err)
	}
	el := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if got := scalar(b, db, `SELECT count(*) FROM typed`); got != n/2 {
		b.Fatalf("%d rows, want %d", got, n/2)
	}
	b.ReportMetric(float64(n)/el.Seconds(), "rows/s")
	b.ReportMetric(0, "ns/op")
}
