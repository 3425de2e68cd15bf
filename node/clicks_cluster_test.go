package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// fastClicks is a copy of the built-in click pipeline with windows short enough for a
// test: 1 s windows, 200 ms out-of-orderness, 500 ms lateness, input partitions idle
// after 300 ms.
var fastClicks = procedures.ClickPipelineConfig{Prefix: "fast.", Window: time.Second,
	OutOfOrderness: 200 * time.Millisecond, AllowedLateness: 500 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}

func clickRegistry(int) *procedures.Registry {
	r := procedures.Builtins()
	if err := procedures.RegisterClickPipeline(r, fastClicks); err != nil {
		panic(err)
	}
	return r
}

// clickWindow names one page's window.
type clickWindow struct {
	page  string
	start int64
}

// clickOutputs is what one replica's click pipeline holds.
type clickOutputs struct {
	raw    string                   // every record of the output streams, byte for byte
	input  map[string]builtin.Click // the input clicks by key (each key is used once)
	finals map[clickWindow]int64    // final count per window
	late   []builtin.Click
}

func readClickOutputs(t *testing.T, n *Node) clickOutputs {
	t.Helper()
	s := fastClicks.Streams()
	o := clickOutputs{input: map[string]builtin.Click{}, finals: map[clickWindow]int64{}}
	var raw strings.Builder
	last := map[clickWindow]builtin.PageCount{}
	for _, p := range n.fsm.Engine().Partitions() {
		read := func(stream string) []partition.Record {
			recs, _, err := p.ReadStream(stream, 0, 1<<30)
			if err != nil {
				t.Fatalf("node %s: %v", n.ID(), err)
			}
			return recs
		}
		for _, r := range read(s.Clicks) {
			var c builtin.Click
			if err := msgpack.Unmarshal(r.Value, &c); err != nil {
				t.Fatal(err)
			}
			c.User = string(r.Key)
			o.input[c.User] = c
		}
		for _, name := range []string{s.Counts, s.Late, s.Clicks + partition.DeadLetterSuffix, s.ByPage + partition.DeadLetterSuffix} {
			for _, r := range read(name) {
				fmt.Fprintf(&raw, "%d %s %q %x %d\n", p.ID(), name, r.Key, r.Value, r.EventTime)
			}
		}
		for _, r := range read(s.Counts) {
			var pc builtin.PageCount
			if err := msgpack.Unmarshal(r.Value, &pc); err != nil {
				t.Fatal(err)
			}
			w := clickWindow{pc.Page, pc.Start}
			if prev, ok := last[w]; (ok && (prev.Final || pc.Revision != prev.Revision+1)) || (!ok && pc.Revision != 0) {
				t.Fatalf("node %s: result %+v after %+v", n.ID(), pc, prev)
			}
			last[w] = pc
			if pc.Final {
				o.finals[w] = pc.Count
			}
		}
		for _, r := range read(s.Late) {
			var c builtin.Click
			if err := msgpack.Unmarshal(r.Value, &c); err != nil {
				t.Fatal(err)
			}
			o.late = append(o.late, c)
		}
	}
	for w, pc := range last {
		if !pc.Final && w.page != closePage {
			t.Fatalf("node %s: window %+v not closed: %+v", n.ID(), w, pc)
		}
	}
	o.raw = raw.String()
	return o
}

// closePage is the page of the closing click: an hour of event time past the others, it
// moves the watermark past every window but its own (batch time alone closes none:
// docs/streams.md, "Watermarks across the exchange").
const closePage = "zz.close"

// clickPipelineDone reports why a replica's pipeline is not finished: a processor behind
// or an open window other than the closing click's.
func clickPipelineDone(n *Node) error {
	for _, st := range n.FSM().Processors() {
		if strings.HasPrefix(st.Processor, fastClicks.Prefix) && (st.Waiting || st.Lag != 0) {
			return fmt.Errorf("node %s: %+v", n.ID(), st)
		}
	}
	open := 0
	for _, p := range n.fsm.Engine().Partitions() {
		p.Scan(fastClicks.Prefix+builtin.PageCountsStream+".win", partition.ScanOptions{}, func(_, _ []byte) bool {
			open++
			return true
		})
	}
	if open != 1 {
		return fmt.Errorf("node %s: %d windows open, want the closing click's", n.ID(), open)
	}
	return nil
}

// TestClusterClickPipeline: producers append clicks (event times up to 3 s old, so some
// are late) in batches through the client while the leader is killed and restarted
// twice; then one closing click an hour ahead, and ticks close every other window. Every replica
// holds the same output records byte for byte and the same hashes; the clicks stream
// holds every acknowledged click and no click whose append was not tried; and for every
// (page, window) the final count plus the late clicks equals the clicks in the stream —
// the invariant that holds however the log's entries fell (docs/streams.md, "The
// built-in pipeline"). The exact outputs of a given log are checked against a reference
// in the replica package's property test.
func TestClusterClickPipeline(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, snapshots: true, registry: clickRegistry, partitions: 4,
		processorBudget: 8, idleChecksOnly: true, processorTick: 10 * time.Millisecond, processorIdleTick: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	setup := c.dial(ctx)
	s := fastClicks.Streams()
	// Only the input: the processors' declared outputs are created for them.
	if err := setup.Streams().Create(ctx, builtin.StreamDefinition{Name: s.Clicks}); err != nil {
		t.Fatal(err)
	}
	const workers = 4
	var mu sync.Mutex
	acked, tried := map[string]bool{}, map[string]bool{}
	var stop atomic.Bool
	var batches atomic.Int64
	var wg sync.WaitGroup
	pages := []string{"home", "cart", "faq", "news", "blog"}
	for w := range workers {
		cl := c.dial(ctx)
		rng := rand.New(rand.NewPCG(uint64(w), 7))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); {
				recs := make([]client.StreamRecord, 4)
				for i := range recs {
					jitter := rng.Int64N(400)
					if rng.IntN(10) == 0 {
						jitter = 1000 + rng.Int64N(2000)
					}
					v, _ := msgpack.Marshal(&builtin.Click{Page: pages[rng.IntN(len(pages))], Time: time.Now().UnixMilli() - jitter})
					recs[i] = client.StreamRecord{Key: []byte(fmt.Sprintf("u%d-%d", w, n)), Value: v}
					n++
				}
				mu.Lock()
				for _, r := range recs {
					tried[string(r.Key)] = true
				}
				mu.Unlock()
				actx, acancel := context.WithTimeout(ctx, 20*time.Second)
				_, err := cl.AppendBatch(actx, s.Clicks, recs)
				acancel()
				if err != nil {
					continue
				}
				mu.Lock()
				for _, r := range recs {
					acked[string(r.Key)] = true
				}
				mu.Unlock()
				batches.Add(1)
			}
		}()
	}
	waitBatches := func(n int64) {
		want := batches.Load() + n
		testutil.WaitFor(t, 30*time.Second, func() error {
			if got := batches.Load(); got < want {
				return fmt.Errorf("%d of %d batches acknowledged", got, want)
			}
			return nil
		})
	}
	waitBatches(30)
	for kill := range 2 {
		old := c.leader()
		victim := -1
		for i, n := range c.Nodes {
			if n == old {
				victim = i
			}
		}
		if victim < 0 {
			t.Fatal("no leader")
		}
		c.kill(victim)
		if c.waitLeader() == old {
			t.Fatal("old leader still leads")
		}
		waitBatches(30)
		c.restart(victim)
		waitBatches(10)
		t.Logf("kill %d: node %d killed and restarted, %d batches acknowledged", kill, victim, batches.Load())
	}
	stop.Store(true)
	wg.Wait()

	// One closing click, an hour ahead; then nothing more is appended: the other input
	// partitions go idle and the watermark passes every other window.
	closing, _ := msgpack.Marshal(&builtin.Click{Page: closePage, Time: time.Now().Add(time.Hour).UnixMilli()})
	tried["close"] = true
	if _, err := setup.AppendBatch(ctx, s.Clicks, []client.StreamRecord{{Key: []byte("close"), Value: closing}}); err != nil {
		t.Fatal(err)
	}
	acked["close"] = true
	testutil.WaitFor(t, 60*time.Second, func() error {
		for _, n := range c.Nodes {
			if err := clickPipelineDone(n); err != nil {
				return err
			}
		}
		return nil
	})
	waitConvergedTicking(t, c)
	var first *clickOutputs
	for _, n := range c.Nodes {
		o := readClickOutputs(t, n)
		if first == nil {
			first = &o
			checkClickOutputs(t, o, acked, tried)
		} else if o.raw != first.raw {
			t.Fatalf("node %s: outputs differ from another replica's\n%s\nother:\n%s", n.ID(), o.raw, first.raw)
		}
	}
	t.Logf("%d clicks appended (%d acknowledged), %d windows, %d late", len(first.input), len(acked), len(first.finals), len(first.late))
}

// checkClickOutputs checks one replica's outputs against its input stream and the
// producers' outcomes.
func checkClickOutputs(t *testing.T, o clickOutputs, acked, tried map[string]bool) {
	t.Helper()
	for k := range acked {
		if _, ok := o.input[k]; !ok {
			t.Errorf("acknowledged click %s not in the stream", k)
		}
	}
	for k := range o.input {
		if !tried[k] {
			t.Errorf("click %s in the stream was never appended", k)
		}
	}
	size := fastClicks.Window.Milliseconds()
	want := map[clickWindow]int64{}
	for _, c := range o.input {
		if c.Page != closePage {
			want[clickWindow{c.Page, c.Time - c.Time%size}]++
		}
	}
	got := map[clickWindow]int64{}
	for w, n := range o.finals {
		got[w] += n
	}
	for _, c := range o.late {
		if in, ok := o.input[c.User]; !ok || in != c {
			t.Errorf("late click %+v, input %+v", c, in)
		}
		got[clickWindow{c.Page, c.Time - c.Time%size}]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("final counts + late clicks per window %v, clicks in the stream %v", got, want)
	}
}

// waitConvergedTicking waits until the replicas are at one index with equal hashes, and
// checks every partition's incremental hash against a full recompute, like
// waitConverged; but idle ticks keep moving the watermarks here, so a partition whose
// hash changed during its recompute is checked again rather than compared.
func waitConvergedTicking(t *testing.T, c *testCluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		for _, p := range n.fsm.Engine().Partitions() {
			testutil.WaitFor(t, 30*time.Second, func() error {
				before := p.Hash()
				r := p.RecomputeHash()
				if after := p.Hash(); after != before {
					return fmt.Errorf("node %s partition %d changed during the recompute", n.ID(), p.ID())
				}
				if r != before {
					t.Fatalf("node %s partition %d: incremental hash %x, recomputed %x", n.ID(), p.ID(), before, r)
				}
				return nil
			})
		}
	}
}
