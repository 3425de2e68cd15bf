package jepsen

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// setStream is the stream the set workload appends to.
const setStream = "jepsen-set"

// Set is the set workload: unique elements appended to a stream (each its own key). The
// final read of every partition must hold every acknowledged element exactly once and
// nothing never attempted; each partition's offsets must be dense from 0; and the
// records' event times — the batch time of their append, as none is given — must never
// go backwards along a partition (batch time is monotonic, even across leaders whose
// clocks disagree).
type Set struct{}

// Name implements Workload.
func (s *Set) Name() string { return "set" }

// Setup implements Workload: creates the stream.
func (s *Set) Setup(ctx context.Context, cl *client.Client) error {
	return cl.Streams().Create(ctx, builtin.StreamDefinition{Name: setStream})
}

// element is worker p's i-th element.
func element(p int, i int64) string { return fmt.Sprintf("e%d-%d", p, i) }

// Invoke implements Workload.
func (s *Set) Invoke(ctx context.Context, w *Worker) {
	e := element(w.Process, w.Seq)
	w.Do(Op{F: "append", Key: e}, func() ([]int64, error) {
		off, err := w.Client.Append(ctx, setStream, []byte(e), []byte(e))
		return []int64{int64(off)}, err
	})
}

// Check implements Workload.
func (s *Set) Check(ctx context.Context, cl *client.Client, hist []Op, _ string) []Verdict {
	attempted, acked := map[string]bool{}, map[string]bool{}
	for _, op := range hist {
		if op.F != "append" {
			continue
		}
		if op.Status != StatusFail {
			attempted[op.Key] = true
		}
		if op.Status == StatusOK {
			acked[op.Key] = true
		}
	}
	desc, err := cl.Streams().Describe(ctx, setStream)
	if err != nil {
		return []Verdict{{Checker: "set", Detail: fmt.Sprintf("describe %s: %v", setStream, err)}}
	}
	count := map[string]int{}
	dense := Verdict{Checker: "set-offsets-dense", Valid: true}
	clock := Verdict{Checker: "batch-time-monotonic", Valid: true}
	records := 0
	for _, p := range desc.Partitions {
		next, last := uint64(0), int64(0)
		for {
			recs, nx, err := cl.ReadStream(ctx, setStream, int(p.Partition), next, 0)
			if err != nil {
				return []Verdict{{Checker: "set", Detail: fmt.Sprintf("read partition %d at %d: %v", p.Partition, next, err)}}
			}
			for _, r := range recs {
				if r.Offset != next && dense.Valid {
					dense.Valid, dense.Detail = false, fmt.Sprintf("partition %d: offset %d after %d", p.Partition, r.Offset, next)
				}
				next = r.Offset + 1
				if t := r.EventTime.UnixMilli(); t < last && clock.Valid {
					clock.Valid, clock.Detail = false, fmt.Sprintf("partition %d offset %d: batch time %d ms after %d ms", p.Partition, r.Offset, t, last)
				} else {
					last = t
				}
				count[string(r.Data)]++
				records++
			}
			if len(recs) == 0 {
				break
			}
			next = nx
		}
	}
	set := Verdict{Checker: "set", Valid: true}
	var lost, dup, phantom []string
	for e := range acked {
		if count[e] == 0 {
			lost = append(lost, e)
		}
	}
	for e, k := range count {
		if k > 1 {
			dup = append(dup, e+"×"+strconv.Itoa(k))
		}
		if !attempted[e] {
			phantom = append(phantom, e)
		}
	}
	slices.Sort(lost)
	slices.Sort(dup)
	slices.Sort(phantom)
	if len(lost)+len(dup)+len(phantom) > 0 {
		set.Valid = false
		set.Detail = fmt.Sprintf("lost %d acknowledged %s; duplicated %s; never attempted %s",
			len(lost), first(lost), first(dup), first(phantom))
	} else {
		set.Detail = fmt.Sprintf("%d records read, %d acknowledged, %d attempted", records, len(acked), len(attempted))
	}
	if dense.Valid {
		dense.Detail = fmt.Sprintf("%d partitions", len(desc.Partitions))
	}
	if clock.Valid {
		clock.Detail = "event times non-decreasing in every partition"
	}
	return []Verdict{set, dense, clock}
}

// first returns up to five of xs, for a verdict's detail.
func first(xs []string) string {
	if len(xs) > 5 {
		return strings.Join(xs[:5], ",") + ",..."
	}
	return strings.Join(xs, ",")
}
