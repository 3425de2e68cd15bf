package system

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// typedSinkSchema is stream s's CREATE statement, given to the sink with --schema.
const typedSinkSchema = `CREATE STREAM s (id bigint, v text) WITH (key = 'id')`

// typedSinkUnderKills appends canonical rows of typedSinkSchema (record j: id j%keys,
// v "v<j>") while a `lockstep sink postgres --schema` process in mode is SIGKILLed, each
// time after it has stored new offsets, and restarted, lets the last one catch up, and returns the table's rows (id|v,
// sorted) and the stream's records decoded, in offset order per partition.
func typedSinkUnderKills(t *testing.T, mode string, keys int) (table []string, records [][][]any) {
	f := newSinkFixture(t, 1)
	schemaFile := filepath.Join(t.TempDir(), "s.sql")
	if err := os.WriteFile(schemaFile, []byte(typedSinkSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	schema := plan.Schema{Name: "s", Kind: plan.KindStream, Columns: []plan.Column{{Name: "id", Type: plan.TypeBigint}, {Name: "v", Type: plan.TypeText}}, Key: 0, EventTime: -1}
	const total, batch = 6000, 100
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var appended atomic.Bool
	appendErr := make(chan error, 1)
	go func() {
		defer appended.Store(true)
		for i := 0; i < total; i += batch {
			var recs []client.StreamRecord
			for j := i; j < i+batch; j++ {
				row := []any{int64(j % keys), fmt.Sprintf("v%d", j)}
				v, err := schema.EncodeRow(row)
				if err != nil {
					appendErr <- err
					return
				}
				recs = append(recs, client.StreamRecord{Key: plan.KeyBytes(row[0]), Value: v})
			}
			if _, err := f.cl.AppendBatch(ctx, "s", recs); err != nil {
				appendErr <- err
				return
			}
			time.Sleep(150 * time.Millisecond)
		}
		appendErr <- nil
	}()
	args := []string{"--table", "typed", "--schema", schemaFile, "--mode", mode, "--batch", "64"}
	sink := f.startSink(t, args...)
	conn := f.db.Connect(t)
	stored := func() (int64, error) {
		var n int64
		err := conn.QueryRow(ctx, `SELECT coalesce(sum(next_offset), 0) FROM lockstep_sink_offsets`).Scan(&n)
		return n, err // the table exists once the first sink started
	}
	kills := 0
	for last := int64(-1); !appended.Load(); {
		// Kill only a sink that has written since the last kill, at a random point after.
		testutil.WaitFor(t, 2*time.Minute, func() error {
			n, err := stored()
			if err == nil && n <= last {
				err = fmt.Errorf("stored offsets at %d, no progress since the last kill", n)
			}
			if err == nil {
				last = n
			}
			return err
		})
		time.Sleep(time.Duration(rand.IntN(700)) * time.Millisecond)
		sink.Kill() // SIGKILL: no shutdown code runs
		kills++
		sink = f.startSink(t, args...)
	}
	if err := <-appendErr; err != nil {
		t.Fatal(err)
	}
	if kills == 0 {
		t.Fatal("the appends ended before the first kill: nothing was tested under kills")
	}
	desc, err := f.cl.Streams().Describe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var next int64
	for _, p := range desc.Partitions {
		next += int64(p.NextOffset)
		var rows [][]any
		for off := p.FirstOffset; off < p.NextOffset; {
			recs, nx, err := f.cl.ReadStream(ctx, "s", int(p.Partition), off, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				row, err := schema.DecodeRow(r.Data)
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, row)
			}
			off = nx
		}
		records = append(records, rows)
	}
	testutil.WaitFor(t, 2*time.Minute, func() error {
		if !sink.Running() {
			t.Fatalf("the last sink exited: %s", sink.Log())
		}
		n, err := stored()
		if err != nil {
			return err
		}
		if n < next {
			return fmt.Errorf("stored offsets at %d of %d", n, next)
		}
		return nil
	})
	sink.Stop(10 * time.Second)
	rows, err := conn.Query(ctx, `SELECT id, v FROM typed`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var v string
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		table = append(table, fmt.Sprintf("%d|%s", id, v))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(table)
	t.Logf("mode %s: %d records, %d rows, %d sink kills", mode, next, len(table), kills)
	return table, records
}

// TestTypedSinkAppendUnderKills: `lockstep sink postgres --schema --mode append`,
// SIGKILLed every 1–2 s while rows are appended: the table holds every record's columns
// exactly once.
func TestTypedSinkAppendUnderKills(t *testing.T) {
	table, records := typedSinkUnderKills(t, "append", 1<<30)
	var want []string
	for _, p := range records {
		for _, r := range p {
			want = append(want, fmt.Sprintf("%d|%s", r[0], r[1]))
		}
	}
	slices.Sort(want)
	if !slices.Equal(table, want) {
		t.Fatalf("table has %d rows, the stream %d records (first rows %q, want %q)", len(table), len(want), table[:min(3, len(table))], want[:3])
	}
}

// TestTypedSinkUpsertUnderKills: the same in mode upsert over 200 keys: the table holds
// one row per key, its last record's.
func TestTypedSinkUpsertUnderKills(t *testing.T) {
	table, records := typedSinkUnderKills(t, "upsert", 200)
	last := map[int64]string{}
	for _, p := range records {
		for _, r := range p { // offset order: the last record of a key wins
			last[r[0].(int64)] = fmt.Sprintf("%d|%s", r[0], r[1])
		}
	}
	var want []string
	for _, s := range last {
		want = append(want, s)
	}
	slices.Sort(want)
	if !slices.Equal(table, want) {
		t.Fatalf("table has %d rows, want %d (first rows %q, want %q)", len(table), len(want), table[:min(3, len(table))], want[:3])
	}
}
