package jepsen

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/client"
)

// Counter is the counter workload: concurrent counter.add of 1 on a few counters, with
// the client's retries. Each counter's final value must lie within [acknowledged,
// acknowledged + unknown] (DESIGN.md invariants 3 and 4), equal the acknowledged count
// when no add was unknown, and the values acknowledged adds returned must be distinct.
type Counter struct {
	// Counters is the number of counters. Default 3.
	Counters int
}

// Name implements Workload.
func (c *Counter) Name() string { return "counter" }

func (c *Counter) n() int {
	if c.Counters <= 0 {
		return 3
	}
	return c.Counters
}

// Setup implements Workload: counters start at 0.
func (c *Counter) Setup(context.Context, *client.Client) error { return nil }

// Invoke implements Workload.
func (c *Counter) Invoke(ctx context.Context, w *Worker) {
	name := fmt.Sprintf("c%d", w.Rand.IntN(c.n()))
	w.Do(Op{F: "add", Key: name, Args: []int64{1}}, func() ([]int64, error) {
		v, err := w.Client.CounterAdd(ctx, name, 1)
		return []int64{v}, err
	})
}

// Check implements Workload.
func (c *Counter) Check(ctx context.Context, cl *client.Client, hist []Op, _ string) []Verdict {
	var names []string
	for i := range c.n() {
		names = append(names, fmt.Sprintf("c%d", i))
	}
	return checkCounters(ctx, cl, hist, names)
}

// checkCounters checks the adds of hist to the counters names: each final value (read
// through cl) within [acknowledged, acknowledged + unknown], acknowledged results distinct
// and within [1, final value] (an add of 1 returns the counter's new value).
func checkCounters(ctx context.Context, cl *client.Client, hist []Op, names []string) []Verdict {
	acked, unknown := map[string]int64{}, map[string]int64{}
	highest := map[string]int64{} // the largest acknowledged result per counter
	seen := map[string]map[int64]bool{}
	distinct := Verdict{Checker: "counter-distinct", Valid: true}
	for _, op := range hist {
		if op.F != "add" {
			continue
		}
		switch op.Status {
		case StatusOK:
			acked[op.Key]++
			if seen[op.Key] == nil {
				seen[op.Key] = map[int64]bool{}
			}
			if seen[op.Key][op.Result[0]] {
				distinct.Valid = false
				distinct.Detail = fmt.Sprintf("two acknowledged adds to %s returned %d", op.Key, op.Result[0])
			}
			seen[op.Key][op.Result[0]] = true
			highest[op.Key] = max(highest[op.Key], op.Result[0])
			if op.Result[0] < 1 {
				distinct.Valid = false
				distinct.Detail = fmt.Sprintf("an acknowledged add to %s returned %d", op.Key, op.Result[0])
			}
		case StatusInfo:
			unknown[op.Key]++
		}
	}
	bounds := Verdict{Checker: "counter-bounds", Valid: true}
	var summary []string
	for _, name := range names {
		got, err := cl.CounterGet(ctx, name)
		a, u := acked[name], unknown[name]
		switch {
		case err != nil:
			bounds.Valid, bounds.Detail = false, fmt.Sprintf("final read of %s: %v", name, err)
		case got < a || got > a+u:
			bounds.Valid, bounds.Detail = false, fmt.Sprintf("%s is %d, want within [%d, %d]", name, got, a, a+u)
		case highest[name] > got:
			bounds.Valid, bounds.Detail = false, fmt.Sprintf("%s is %d, but an acknowledged add returned %d", name, got, highest[name])
		}
		summary = append(summary, fmt.Sprintf("%s=%d (acked %d, unknown %d)", name, got, a, u))
	}
	if bounds.Valid {
		bounds.Detail = fmt.Sprint(summary)
	}
	if distinct.Valid {
		distinct.Detail = "acknowledged results distinct"
	}
	return []Verdict{bounds, distinct}
}
