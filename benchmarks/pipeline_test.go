package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/latency"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

const (
	pipeBatch      = 100     // clicks per AppendBatch call
	pipeUsers      = 4096    // keys of demo.clicks
	pipePages      = 100     // pages, the keys of demo.clicks.by_page and demo.page_counts
	pipeRetention  = 2000000 // records kept per partition of the two click streams
	pipeJitterFrac = 10      // one click in pipeJitterFrac is up to pipeJitterMs old
	pipeJitterMs   = 3000
)

// pipeAck is one acknowledged AppendBatch call: when its answer arrived, and per partition
// of the counter (a page's partition) the latest event time among its clicks there (-1:
// none).
type pipeAck struct {
	at     time.Time
	maxPer [appendPartitions]int64
}

// pipeAcks collects every acknowledged call, in the order the answers arrived.
type pipeAcks struct {
	mu   sync.Mutex
	acks []pipeAck
}

func (a *pipeAcks) add(k pipeAck) {
	a.mu.Lock()
	a.acks = append(a.acks, k)
	a.mu.Unlock()
}

// firstAtLeast returns when the first call holding a click of partition part with event
// time ≥ t was acknowledged, and false if none was.
func (a *pipeAcks) firstAtLeast(part int, t int64) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range a.acks {
		if k.maxPer[part] >= t {
			return k.at, true
		}
	}
	return time.Time{}, false
}

// pacer spaces AppendBatch calls so that they carry at most rate clicks/s in all; a nil
// pacer does not wait.
type pacer struct {
	mu   sync.Mutex
	next time.Time
	gap  time.Duration
}

func newPacer(rate int) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{gap: time.Duration(float64(time.Second) * pipeBatch / float64(rate))}
}

// wait blocks until the caller's slot comes.
func (p *pacer) wait() {
	if p == nil {
		return
	}
	p.mu.Lock()
	now := time.Now()
	slot := p.next
	if slot.Before(now) {
		slot = now
	}
	p.next = slot.Add(p.gap)
	p.mu.Unlock()
	time.Sleep(slot.Sub(now))
}

// pipeRate is LOCKSTEP_PIPE_RATE, the offered clicks/s; 0 (unset) means as fast as the
// calls in flight go.
func pipeRate() int {
	n, _ := strconv.Atoi(os.Getenv("LOCKSTEP_PIPE_RATE"))
	return n
}

// clickOp returns a workload of AppendBatch calls of pipeBatch clicks to demo.clicks, each
// keyed by a random user, for a random page, with event time the wall clock in ms (one in
// pipeJitterFrac up to pipeJitterMs earlier); each acknowledged call is added to acks and
// its AppendBatch time (without the pacer's wait) to calls.
func clickOp(acks *pipeAcks, pace *pacer, calls *latency.Recorder) Op {
	users := make([]string, pipeUsers)
	for i := range users {
		users[i] = fmt.Sprintf("user/%05d", i)
	}
	pages := make([]string, pipePages)
	pagePart := make([]int, pipePages)
	for i := range pages {
		pages[i] = fmt.Sprintf("/page/%03d", i)
		pagePart[i] = partition.PartitionOf([]byte(pages[i]), appendPartitions)
	}
	stream := procedures.DefaultClickPipeline.Streams().Clicks
	return func(ctx context.Context, c *client.Client, _ int, rng *rand.Rand) error {
		pace.wait()
		recs := make([]client.StreamRecord, pipeBatch)
		k := pipeAck{}
		for i := range k.maxPer {
			k.maxPer[i] = -1
		}
		now := time.Now().UnixMilli()
		for i := range recs {
			u, p := rng.IntN(pipeUsers), rng.IntN(pipePages)
			t := now
			if rng.IntN(pipeJitterFrac) == 0 {
				t -= rng.Int64N(pipeJitterMs + 1)
			}
			v, err := msgpack.Marshal(&builtin.Click{User: users[u], Page: pages[p], Time: t})
			if err != nil {
				return err
			}
			recs[i] = client.StreamRecord{Key: []byte(users[u]), Value: v, EventTime: time.UnixMilli(t)}
			k.maxPer[pagePart[p]] = max(k.maxPer[pagePart[p]], t)
		}
		sent := time.Now()
		if _, err := c.AppendBatch(ctx, stream, recs); err != nil {
			return err
		}
		k.at = time.Now()
		calls.Record(k.at.Sub(sent))
		acks.add(k)
		return nil
	}
}

// pipeResult is a Revision-0 window result as the poller saw it.
type pipeResult struct {
	page     string
	part     int
	end      int64
	count    int64
	observed time.Time
}

// pollResults reads every partition of demo.page_counts from the start every 20 ms until
// ctx ends, and returns the Revision-0 results with when each was first read.
func pollResults(ctx context.Context, c *client.Client, stream string) ([]pipeResult, error) {
	var (
		mu  sync.Mutex
		out []pipeResult
		wg  sync.WaitGroup
	)
	errs := make([]error, appendPartitions)
	for part := range appendPartitions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var next uint64
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				for {
					recs, n, err := c.ReadStream(ctx, stream, part, next, 0)
					if err != nil {
						if ctx.Err() == nil {
							errs[part] = err
						}
						return
					}
					now := time.Now()
					next = n
					for _, r := range recs {
						var pc builtin.PageCount
						if err := msgpack.Unmarshal(r.Data, &pc); err != nil {
							errs[part] = err
							return
						}
						if pc.Revision == 0 {
							mu.Lock()
							out = append(out, pipeResult{page: pc.Page, part: part, end: pc.End, count: pc.Count, observed: now})
							mu.Unlock()
						}
					}
					if len(recs) == 0 {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// pipeProgress sums the positions and lags of the pipeline's two processors over the
// partitions, as the leader has applied them.
type pipeProgress struct {
	byPagePos, countsPos, byPageLag, countsLag uint64
}

func pipelineProgress(ctx context.Context, c *client.Client) (pipeProgress, error) {
	st, err := c.Procedures().Processors(ctx, "")
	if err != nil {
		return pipeProgress{}, err
	}
	s := procedures.DefaultClickPipeline.Streams()
	var p pipeProgress
	for _, ps := range st {
		switch ps.Processor {
		case s.ByPage:
			p.byPagePos += ps.Position
			p.byPageLag += ps.Lag
		case s.Counts:
			p.countsPos += ps.Position
			p.countsLag += ps.Lag
		}
	}
	return p, nil
}

// BenchmarkPipelineProcs measures the built-in click pipeline (docs/streams.md, "The
// built-in pipeline") end to end on 3 real `lockstep node` processes, this process being
// the client: it creates the two click streams (they keep the latest 2,000,000 records
// per partition; the processors create the results and late clicks, unbounded), then appends
// clicks to demo.clicks — 256 AppendBatch calls of 100 clicks in flight over 8
// connections (paced to LOCKSTEP_PIPE_RATE clicks/s if set), 4,096 users, 100 pages, event time the wall clock in ms (one click in ten
// up to 3 s earlier) — for 2 s of warm-up and LOCKSTEP_BENCH_SECONDS (default 10) measured.
//
// Reported: clicks appended per second; clicks processed per second by each processor
// (the sum over partitions of its position, from the leader's processor state, at the
// start and end of the measured run) and the most lag (records not yet handled, summed
// over partitions) seen in samples every second; and the window result lag. A window
// [start, end) of a page fires when its partition's watermark (latest click time − 5 s)
// reaches end, so its Revision-0 result can be emitted only once a click of that
// partition with event time ≥ end + 5 s is in. Its lag is the wall time a poller (reading
// demo.page_counts on every partition every 20 ms, from any replica) first read the
// result minus the wall time the first AppendBatch holding such a click was
// acknowledged. With 1-minute windows only the minute boundaries the run crosses yield
// results (100 each, one per page, fired by the same few calls): run with
// LOCKSTEP_BENCH_SECONDS=150 or more.
func BenchmarkPipelineProcs(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	const clients, inflight = 8, 256
	ctx := context.Background()
	pc := startProcs(b, 3)
	addrs := pc.clientAddrs()
	cl := pc.dial(b)
	cfg := procedures.DefaultClickPipeline
	s := cfg.Streams()
	// Downstream first: the processors create their declared outputs (unbounded) once
	// their input exists, so demo.clicks.by_page, created by hand before demo.clicks,
	// keeps its retention, and the results and late clicks are created for us.
	for _, d := range []builtin.StreamDefinition{
		{Name: s.ByPage, Retention: builtin.StreamRetention{MaxRecords: pipeRetention}},
		{Name: s.Clicks, Retention: builtin.StreamRetention{MaxRecords: pipeRetention}},
	} {
		if err := cl.Streams().Create(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	reader, err := client.Dial(ctx, client.Config{Addrs: addrs, TLS: testutil.ClientTLS(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer reader.Close()
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	var (
		results []pipeResult
		pollErr error
		pollWG  sync.WaitGroup
	)
	pollWG.Add(1)
	go func() {
		defer pollWG.Done()
		results, pollErr = pollResults(pollCtx, reader, s.Counts)
	}()

	acks := &pipeAcks{}
	calls := latency.New()
	op := clickOp(acks, newPacer(pipeRate()), calls)
	if _, err := Run(ctx, addrs, Load{Clients: clients, Inflight: inflight, Duration: 2 * time.Second, Op: op, TLS: testutil.ClientTLS(b)}); err != nil {
		b.Fatal(err)
	}
	p0, err := pipelineProgress(ctx, cl)
	if err != nil {
		b.Fatal(err)
	}
	cpu0, self0 := pc.cpu(), selfCPU()
	m0 := pc.metrics()
	calls.Take() // the warm-up's

	// Sample the processors' lag every second while the load runs.
	var maxByPageLag, maxCountsLag uint64
	var lagLog []string
	sampleCtx, stopSample := context.WithCancel(ctx)
	var sampleWG sync.WaitGroup
	sampleWG.Add(1)
	go func() {
		defer sampleWG.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 1; ; i++ {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
			p, err := pipelineProgress(sampleCtx, cl)
			if err != nil {
				continue
			}
			maxByPageLag, maxCountsLag = max(maxByPageLag, p.byPageLag), max(maxCountsLag, p.countsLag)
			if i%10 == 0 {
				lagLog = append(lagLog, fmt.Sprintf("%ds %d/%d", i, p.byPageLag, p.countsLag))
			}
		}
	}()

	b.ResetTimer()
	r, err := Run(ctx, addrs, Load{Clients: clients, Inflight: inflight, Duration: benchDuration(), Op: op, TLS: testutil.ClientTLS(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	p1, err := pipelineProgress(ctx, cl)
	if err != nil {
		b.Fatal(err)
	}
	cpu1, self1 := pc.cpu(), selfCPU()
	m1 := pc.metrics()
	appendLat := calls.Take()
	stopSample()
	sampleWG.Wait()

	// Drain: wait until both processors have handled every click (bounded), then give the
	// poller time to read the last results.
	drainStart := time.Now()
	drained := false
	for time.Since(drainStart) < 60*time.Second {
		p, err := pipelineProgress(ctx, cl)
		if err == nil && p.byPageLag == 0 && p.countsLag == 0 {
			drained = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	drain := time.Since(drainStart)
	time.Sleep(500 * time.Millisecond)
	stopPoll()
	pollWG.Wait()
	if pollErr != nil {
		b.Fatal(pollErr)
	}
	late, err := cl.Streams().Describe(ctx, s.Late)
	if err != nil {
		b.Fatal(err)
	}
	var lateClicks int64
	for _, p := range late.Partitions {
		lateClicks += p.Records
	}

	// Window result lag, per Revision-0 result.
	ooo := cfg.OutOfOrderness.Milliseconds()
	var lags []time.Duration
	windows := map[int64][]time.Duration{}
	noTrigger := 0
	for _, res := range results {
		at, ok := acks.firstAtLeast(res.part, res.end+ooo)
		if !ok { // fired on a tick (an input partition went idle), not by a click
			noTrigger++
			continue
		}
		lags = append(lags, res.observed.Sub(at))
		windows[res.end] = append(windows[res.end], res.observed.Sub(at))
	}
	slices.Sort(lags)
	pct := func(q float64) time.Duration {
		if len(lags) == 0 {
			return 0
		}
		return lags[min(len(lags)-1, int(q*float64(len(lags))))]
	}
	var ends []string
	for e, w := range windows {
		slices.Sort(w)
		ends = append(ends, fmt.Sprintf("%s: %d results, lag min %s median %s max %s", time.UnixMilli(e).UTC().Format("15:04:05"),
			len(w), w[0].Round(time.Millisecond), w[len(w)/2].Round(time.Millisecond), w[len(w)-1].Round(time.Millisecond)))
	}
	slices.Sort(ends)

	secs := r.Elapsed.Seconds()
	appended := r.Throughput() * pipeBatch
	b.ReportMetric(appended, "appended/s")
	b.ReportMetric(float64(p1.byPagePos-p0.byPagePos)/secs, "by_page/s")
	b.ReportMetric(float64(p1.countsPos-p0.countsPos)/secs, "counted/s")
	b.ReportMetric(float64(max(maxByPageLag, maxCountsLag)), "max-lag")
	b.ReportMetric(float64(appendLat.P99.Microseconds())/1000, "append-p99-ms")
	b.ReportMetric(float64(len(lags)), "results")
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "win-p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "win-p99-ms")
	b.ReportMetric(float64(r.Errors), "errors")
	var cpus, applies string
	for i := range cpu1 {
		cpus += fmt.Sprintf("%s %.0f%%, ", pc.nodes[i].id, 100*(cpu1[i]-cpu0[i]).Seconds()/secs)
		applies += fmt.Sprintf("; %s %s", pc.nodes[i].id, applyDelta(m0[i], m1[i], secs))
	}
	var winMin, winMax time.Duration
	if len(lags) > 0 {
		winMin, winMax = lags[0], lags[len(lags)-1]
	}
	b.Logf("offered rate %d clicks/s (0: unpaced); workers (latency includes the pacer's wait): %s; %.0f clicks/s appended; processed/s: by_page %.0f, page_counts %.0f; "+
		"max lag by_page %d, page_counts %d (every 10 s, by_page/page_counts: %v); drained in %s (%v); "+
		"AppendBatch calls alone (no pacer wait): p50 %s p99 %s max %s; "+
		"window results (Revision 0): %d with a triggering click, %d without; per window ending %v; "+
		"lag p50 %s p99 %s min %s max %s; late clicks %d; CPU of 200%%: %sclient process %.0f%%%s",
		pipeRate(), r, appended, float64(p1.byPagePos-p0.byPagePos)/secs, float64(p1.countsPos-p0.countsPos)/secs,
		maxByPageLag, maxCountsLag, lagLog, drain.Round(time.Millisecond), drained,
		appendLat.P50, appendLat.P99, appendLat.Max, len(lags), noTrigger, ends, pct(0.50), pct(0.99), winMin, winMax, lateClicks,
		cpus, 100*(self1-self0).Seconds()/secs, applies)
}
