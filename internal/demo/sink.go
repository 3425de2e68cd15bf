package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/pgsink"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// demoSinkTable is the table, in the demo's schema, the window results are copied into.
const demoSinkTable = "page_counts"

// demoSink runs the PostgreSQL sink (client/pgsink) on the window results during the
// pipeline demo: one instance from the start, then a second that takes over midway and
// fences the first, as a restarted sink would fence a zombie.
type demoSink struct {
	dsn, schema, table string
	stream             string
	life               context.Context // bounds every instance's run
	cl                 *client.Client
	log                *slog.Logger
	out                io.Writer
	mu                 sync.Mutex
	running            []*runningSink
}

type runningSink struct {
	n      int
	sink   *pgsink.Sink
	cancel context.CancelFunc
	done   chan error
}

// startDemoSink drops and creates schema (the demo owns it, PipelineConfig.Validate
// checked its name), creates the target table and starts the first sink instance.
func startDemoSink(ctx context.Context, dsn, schema, stream string, cl *client.Client, log *slog.Logger, out io.Writer) (*demoSink, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("demo: connect to the sink's database: %w", err)
	}
	defer conn.Close(context.Background())
	schemaID := pgx.Identifier{schema}.Sanitize()
	table := pgx.Identifier{schema, demoSinkTable}.Sanitize()
	for _, sql := range []string{"DROP SCHEMA IF EXISTS " + schemaID + " CASCADE", "CREATE SCHEMA " + schemaID, fmt.Sprintf(pgsink.TableSchema, table)} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return nil, fmt.Errorf("demo: prepare the sink's table: %s: %w", sql, err)
		}
	}
	d := &demoSink{life: ctx, dsn: dsn, schema: schema, table: schema + "." + demoSinkTable, stream: stream, cl: cl, log: log, out: out}
	if err := d.startInstance(); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "sink 1 copies %s into PostgreSQL table %s (rows and offsets in one transaction)\n", stream, d.table)
	return d, nil
}

// startInstance opens a new sink instance, which takes the next epoch, and runs it until
// stop.
func (d *demoSink) startInstance() error {
	s, err := pgsink.Open(d.life, pgsink.Config{DSN: d.dsn, Table: d.table, Stream: d.stream, Logger: d.log}, &pgsink.SubscribeOrigin{Client: d.cl})
	if err != nil {
		return fmt.Errorf("demo: start the sink: %w", err)
	}
	rctx, cancel := context.WithCancel(d.life)
	d.mu.Lock()
	r := &runningSink{n: len(d.running) + 1, sink: s, cancel: cancel, done: make(chan error, 1)}
	d.running = append(d.running, r)
	d.mu.Unlock()
	go func() {
		err := s.Run(rctx)
		if errors.Is(err, pgsink.ErrFenced) {
			fmt.Fprintf(d.out, "sink %d fenced by a newer instance, wrote nothing more: %v\n", r.n, err)
		}
		r.done <- err
	}()
	return nil
}

// takeOver starts a second instance after the given time, unless ctx ends first.
func (d *demoSink) takeOver(ctx context.Context, after time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(after):
	}
	if err := d.startInstance(); err != nil {
		fmt.Fprintf(d.out, "%v\n", err)
		return
	}
	fmt.Fprintln(d.out, "sink 2 started: it took the next epoch and resumes from the offsets stored in PostgreSQL")
}

// stop ends every instance; it returns the error of the newest if it failed (an older
// one may end fenced, as it should).
func (d *demoSink) stop() error {
	d.mu.Lock()
	running := d.running
	d.running = nil // a second stop has nothing to do
	d.mu.Unlock()
	var last error
	for i, r := range running {
		r.cancel()
		err := <-r.done
		r.sink.Close()
		if i == len(running)-1 {
			last = err
		}
	}
	return last
}

// check waits until the table holds as many rows as the results stream, then compares:
// every (partition, offset) once, and the final result of every window equal to the one
// the live view received.
func (d *demoSink) check(ctx context.Context, results int64, finals map[clickWindowKey]builtin.PageCount) ([]string, error) {
	conn, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	ident := pgx.Identifier{d.schema, demoSinkTable}.Sanitize()
	var rows, distinct int64
	for {
		err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT (partition, "offset")) FROM `+ident).Scan(&rows, &distinct)
		if err != nil {
			return nil, fmt.Errorf("demo: count the sink's rows: %w", err)
		}
		if rows >= results {
			break
		}
		select {
		case <-ctx.Done():
			return []string{fmt.Sprintf("sink table holds %d rows, the stream %d results", rows, results)}, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
	var problems []string
	if rows != results || distinct != rows {
		problems = append(problems, fmt.Sprintf("sink table holds %d rows (%d distinct offsets), the stream %d results", rows, distinct, results))
	}
	q, err := conn.Query(ctx, `SELECT value FROM `+ident)
	if err != nil {
		return nil, err
	}
	inTable := map[clickWindowKey]builtin.PageCount{}
	for q.Next() {
		var v []byte
		if err := q.Scan(&v); err != nil {
			q.Close()
			return nil, err
		}
		var pc builtin.PageCount
		if err := msgpack.Unmarshal(v, &pc); err != nil {
			q.Close()
			return nil, fmt.Errorf("demo: a sink row's value: %w", err)
		}
		if pc.Final {
			inTable[clickWindowKey{pc.Page, pc.Start}] = pc
		}
	}
	q.Close()
	if err := q.Err(); err != nil {
		return nil, err
	}
	for k, pc := range finals {
		if pc.Final && inTable[k] != pc {
			problems = append(problems, fmt.Sprintf("sink table: window %s %s final %+v, the stream's %+v", k.page, minuteOf(k.start), inTable[k], pc))
		}
	}
	if len(inTable) != len(finals) {
		problems = append(problems, fmt.Sprintf("sink table holds %d final results, the stream %d", len(inTable), len(finals)))
	}
	return problems, nil
}
