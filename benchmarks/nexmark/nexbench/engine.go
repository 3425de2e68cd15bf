package nexbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/feed"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/goqueries"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// The engines a query runs on.
const (
	// EngineGo is the hand-written Go processors of package goqueries, which only bench
	// nodes carry (StartCluster, Registry).
	EngineGo = "go"
	// EngineSQL is the query's SQL text (nexmark.SQLQueries) deployed through the log as
	// a module of kind sql, on any node.
	EngineSQL = "sql"
)

// Engines lists the engines.
var Engines = []string{EngineGo, EngineSQL}

// Queries returns the queries engine runs, in order (nil for an unknown engine).
func Queries(engine string) []string {
	switch engine {
	case EngineGo:
		return goqueries.Queries
	case EngineSQL:
		return nexmark.SQLNames()
	}
	return nil
}

// CheckQuery returns an ErrBadConfig error unless engine runs query q.
func CheckQuery(engine, q string) error {
	qs := Queries(engine)
	switch {
	case qs == nil:
		return fmt.Errorf("%w: engine %q: want one of %v", ErrBadConfig, engine, Engines)
	case !slices.Contains(qs, q):
		return fmt.Errorf("%w: query %q on engine %s: want one of %v", ErrBadConfig, q, engine, qs)
	}
	return nil
}

// deployed is a query made ready to run on a cluster: where its results are and how
// they read.
type deployed struct {
	engine, query string
	// output is the stream of its results; its processors are named output or
	// output.<step>.
	output string
	// closeAfterMs, for a windowed query, is how far past a result's event time the
	// input must reach for the watermark to close the result's window (the
	// out-of-orderness, and for the Go queries the 1 ms from the window's last
	// millisecond, their results' time, to its end); -1 for a query without windows.
	closeAfterMs int64
	// view is the SQL engine's output view, whose changelog output is.
	view *plan.View
	// batchTimed: the output's records are at their log entry's batch time, not at an
	// event time (the changelog of an SQL projection, a lookup join, or an aggregate
	// without a window); timeCol is then the view's date_time column, whose value is the
	// result's event time, or -1 (the latency is then from the batch time).
	batchTimed bool
	timeCol    int
}

// deploy creates the input streams and, for the SQL engine, deploys the query's views
// through the log, with out-of-orderness ooo.
func deploy(ctx context.Context, c *client.Client, engine, q string, ooo time.Duration) (*deployed, error) {
	d := &deployed{engine: engine, query: q, closeAfterMs: -1, timeCol: -1}
	if engine == EngineGo {
		d.output = goqueries.Output(q)
		if q == "q5" || q == "q7" || q == "q8" {
			d.closeAfterMs = ooo.Milliseconds() + 1
		}
		return d, feed.CreateStreams(ctx, c, builtin.StreamRetention{})
	}
	views, _ := nexmark.SQLText(q) // CheckQuery passed
	streams := nexmark.SQLStreamsText(fmt.Sprintf("%d milliseconds", ooo.Milliseconds()))
	art, err := sql.Compile(streams+views, sql.Options{})
	if err != nil {
		return nil, fmt.Errorf("nexbench: the SQL of %s: %w", q, err)
	}
	for i := range art.Plan.Views {
		if v := &art.Plan.Views[i]; v.Name == q {
			d.view, d.output = v, v.Name
		}
	}
	if d.view == nil {
		return nil, fmt.Errorf("%w: the SQL of %s defines no view %s", ErrBadConfig, q, q)
	}
	v := d.view
	if d.batchTimed = v.Pair == nil && v.Window == nil; d.batchTimed && len(v.Aggs) == 0 && len(v.GroupBy) == 0 {
		for i, c := range v.Schema.Columns {
			if c.Name == "date_time" && c.Type == plan.TypeTimestamp {
				d.timeCol = i
			}
		}
	}
	if v.Window != nil {
		// A windowed view's changelog record is at its window's end, and the window
		// closes when the watermark passes end + allowed lateness.
		d.closeAfterMs = ooo.Milliseconds() + d.view.AllowedLatenessMs
	} else if lateness, ok := windowedUpstream(art.Plan, v); ok && !d.batchTimed {
		// A view over a windowed view's final rows (q5, q7: a join with them) gets its
		// results when that window closes, at the window's end: a pair's time is the
		// later of its sides'.
		d.closeAfterMs = ooo.Milliseconds() + lateness
	}
	// The streams are one module, the views another, so that a cluster that has the
	// streams (a run before, at --addr) takes the views alone.
	if _, err := c.Streams().Describe(ctx, nexmark.StreamBid); errors.Is(err, client.ErrUnknownStream) {
		if _, err := c.SQL().Exec(ctx, streams); err != nil {
			return nil, fmt.Errorf("nexbench: deploying the Nexmark streams as SQL: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("nexbench: describing %s: %w", nexmark.StreamBid, err)
	}
	if _, err := c.SQL().Exec(ctx, views); err != nil {
		return nil, fmt.Errorf("nexbench: deploying %s as SQL: %w", q, err)
	}
	return d, nil
}

// windowedUpstream reports whether v reads, directly or through other views, the rows
// of a windowed view, and the largest allowed lateness of those windows.
func windowedUpstream(p *plan.Plan, v *plan.View) (int64, bool) {
	var upstream []string
	if v.From != nil {
		upstream = append(upstream, v.Input.Name)
	}
	if v.Pair != nil && v.Pair.RightFrom != nil {
		upstream = append(upstream, v.Pair.Right.Name)
	}
	lateness, found := int64(0), false
	for _, name := range upstream {
		for i := range p.Views {
			u := &p.Views[i]
			if u.Name != name {
				continue
			}
			if u.Window != nil {
				lateness, found = max(lateness, u.AllowedLatenessMs), true
			} else if l, ok := windowedUpstream(p, u); ok {
				lateness, found = max(lateness, l), true
			}
		}
	}
	return lateness, found
}
