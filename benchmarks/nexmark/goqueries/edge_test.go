package goqueries

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/window"
)

func applyAll(f interface {
	ApplyBatch([]*raft.Log) []interface{}
}, logs []*raft.Log) {
	for _, l := range logs {
		f.ApplyBatch([]*raft.Log{l})
	}
}

const t0 int64 = nexmark.DefaultBaseTime

func bid(auction, price, t int64) nexmark.Event {
	return nexmark.Event{Kind: nexmark.KindBid, Bid: &nexmark.Bid{Auction: auction, Bidder: 7, Price: price, DateTime: t}}
}

// TestTies: q5 and q7 keep every row tied at a window's maximum (two auctions with as
// many bids, two bids at the highest price), whatever partitions they come through.
func TestTies(t *testing.T) {
	evs := []nexmark.Event{
		bid(1001, 50, t0+100), bid(1002, 90, t0+200), bid(1003, 90, t0+300), bid(1001, 10, t0+400),
		bid(1002, 5, t0+500), bid(1004, 1, t0+600), bid(1003, 90, t0+10_500), bid(1005, 20, t0+10_600),
	}
	f := newFSM(t, true, "q5", "q7")
	applyAll(f, buildLog(evs, 3))
	before := int64(t0 + 10_601)
	all := append(slices.Clone(evs), drainEvents(t0+10_600+time.Hour.Milliseconds())...)
	got, want := answers(t, f, before), reference(all, before)
	for _, q := range []string{"q5", "q7"} {
		if !reflect.DeepEqual(got[q], want[q]) {
			t.Errorf("%s:\n got: %v\nwant: %v", q, got[q], want[q])
		}
	}
	// The data has the ties it is meant to have.
	if q7 := want["q7"].([]nexmark.Q7Row); len(q7) != 3 || q7[0].Price != 90 || q7[1].Price != 90 {
		t.Fatalf("q7 reference %v: want the two bids at 90 and the second window's 90", q7)
	}
	tied := 0
	for _, r := range want["q5"].([]nexmark.Q5Row) {
		if r.StartTime == t0-8000 && r.Num == 2 {
			tied++
		}
	}
	if tied != 2 {
		t.Fatalf("q5 reference %v: want 1001 and 1002 tied at 2 bids in [t0-8s, t0+2s)", want["q5"])
	}
}

// TestLateRowsGoToLateStream: with an out-of-orderness smaller than the disorder, q7's
// answer is the reference over the bids that were not late, and the late bids are those
// of its late stream (DESIGN.md section 11: late rows equal the late stream).
func TestLateRowsGoToLateStream(t *testing.T) {
	gen, err := nexmark.New(nexmark.Config{Events: 20_000, Rate: 100, OutOfOrderGroup: 1500, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := gen.Slice(0, 20_000)
	if err != nil {
		t.Fatal(err)
	}
	r := procedures.Builtins()
	if err := Register(r, Config{OutOfOrderness: time.Second}, "q7"); err != nil {
		t.Fatal(err)
	}
	f := newFSMFrom(t, r, true)
	applyAll(f, buildLog(evs, 200))
	late := rows[nexmark.Q7Row](t, f, Late("q7"))
	if len(late) == 0 {
		t.Fatal("no late bids: the test shows nothing")
	}
	maxT := maxTime(evs)
	var onTime []nexmark.Event
	pending := map[nexmark.Q7Row]int{}
	for _, l := range late {
		pending[l]++
	}
	for _, e := range append(slices.Clone(evs), drainEvents(maxT+time.Hour.Milliseconds())...) {
		if e.Kind == nexmark.KindBid {
			k := nexmark.Q7Row{Auction: e.Bid.Auction, Price: e.Bid.Price, Bidder: e.Bid.Bidder, DateTime: e.Bid.DateTime, Extra: e.Bid.Extra}
			if pending[k] > 0 {
				pending[k]--
				continue
			}
		}
		onTime = append(onTime, e)
	}
	for k, n := range pending {
		if n > 0 {
			t.Fatalf("late stream holds %v, which is not a generated bid", k)
		}
	}
	got := answers(t, f, maxT+1)["q7"]
	want := slices.DeleteFunc(nexmark.RefQ7(onTime), func(r nexmark.Q7Row) bool { return r.DateTime > maxT })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("q7 with %d late bids:\n got: %v\nwant: %v", len(late), got, want)
	}
	t.Logf("%d late bids, %d rows", len(late), len(want))
}

// TestRegisterErrors: an unknown query or a bad configuration registers nothing; a
// second registration of a query is refused, leaving the first.
func TestRegisterErrors(t *testing.T) {
	r := procedures.Builtins()
	n := len(r.Processors())
	if err := Register(r, DefaultConfig(), "q0", "q6"); !errors.Is(err, ErrUnknownQuery) {
		t.Fatalf("q6: %v, want ErrUnknownQuery", err)
	}
	if err := Register(r, Config{OutOfOrderness: -time.Second}); !errors.Is(err, window.ErrBadConfig) {
		t.Fatalf("negative out-of-orderness: %v, want window.ErrBadConfig", err)
	}
	if len(r.Processors()) != n {
		t.Fatalf("a failed Register added processors")
	}
	if err := Register(r, DefaultConfig(), "q5"); err != nil {
		t.Fatal(err)
	}
	m := len(r.Processors())
	if err := Register(r, DefaultConfig(), "q7", "q5"); !errors.Is(err, procedures.ErrDuplicateProcessor) {
		t.Fatalf("q5 twice: %v, want ErrDuplicateProcessor", err)
	}
	if len(r.Processors()) != m {
		t.Fatalf("a refused Register added processors: %d, want %d", len(r.Processors()), m)
	}
}
