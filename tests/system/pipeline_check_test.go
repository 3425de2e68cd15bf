package system

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"
)

// The pipeline's checker: waits for every stage to finish its input, then compares the
// PostgreSQL table, the view in Lockstep and the batch result of the view's query over
// the committed Kafka records, the output topic with the view's changelog, and the dead
// letters with the bad records produced. It returns the problems it finds (it must find
// some when a stage doubles or loses a record: TestPipelinePlantedSplitStep).

// waitQuiet waits until the source has brought in every committed record, the leader's
// processors have handled every record of their inputs, the PostgreSQL sink's stored
// offsets have reached the end of the view's changelog, and topic out holds as many
// records as the changelog.
func (f *pipelineFixture) waitQuiet(t *testing.T) {
	t.Helper()
	start := time.Now()
	f.waitSourceCaughtUp(t)
	t.Logf("the source caught up in %.1f s", time.Since(start).Seconds())
	testutil.WaitFor(t, 3*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ps, err := f.cl.Procedures().Processors(ctx, f.c.Procs[f.leader(t)].Client)
		if err != nil {
			return err
		}
		return viewProcessorsDone(ps)
	})
	t.Logf("the processors caught up at %.1f s", time.Since(start).Seconds())
	changelog := f.changelogPositions(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := f.db.Connect(t)
	defer conn.Close(ctx)
	testutil.WaitFor(t, 3*time.Minute, func() error {
		var stored int64
		if err := conn.QueryRow(ctx, `SELECT coalesce(sum(next_offset), 0) FROM lockstep_sink_offsets WHERE stream = 'agg'`).Scan(&stored); err != nil {
			return err
		}
		if stored < int64(len(changelog)) {
			return fmt.Errorf("PostgreSQL sink: stored offsets at %d of %d", stored, len(changelog))
		}
		if n := len(f.topicPositions(t, "out")); n < len(changelog) {
			return fmt.Errorf("Kafka sink: %d of %d records in topic out", n, len(changelog))
		}
		return nil
	})
	t.Logf("the sinks caught up at %.1f s", time.Since(start).Seconds())
}

// viewProcessorsDone returns nil if the view's processors (agg.*, the ones SQL deployed
// for it) are all running and have handled every record of their inputs, on every
// partition. Processors of other inputs do not count: the binary carries the demo's
// (demo.clicks.by_page, demo.page_counts), which wait forever on streams this cluster
// never creates, so waiting for every processor of the node never ends.
func viewProcessorsDone(ps []client.ProcessorStatus) error {
	n := 0
	for _, p := range ps {
		if !strings.HasPrefix(p.Processor, pipelineViewName+".") {
			continue
		}
		n++
		if p.Lag != 0 || p.Waiting {
			return fmt.Errorf("processor %s on partition %d: lag %d (waiting %v)", p.Processor, p.Partition, p.Lag, p.Waiting)
		}
	}
	if n == 0 {
		return fmt.Errorf("no processor of view %s among the node's %d", pipelineViewName, len(ps))
	}
	return nil
}

// check compares everything once every stage is quiet (waitQuiet) and returns the
// problems found.
func (f *pipelineFixture) check(t *testing.T) []string {
	t.Helper()
	var problems []string
	view, table := f.viewRows(t), f.pgRows(t)
	problems = append(problems, diffAgg("the view in Lockstep", view, "the batch result over the Kafka records", f.want)...)
	problems = append(problems, diffAgg("the PostgreSQL table", table, "the view in Lockstep", view)...)
	problems = append(problems, f.checkTopic(t)...)
	problems = append(problems, f.checkDeadLetters(t)...)
	var count int64
	for _, w := range view {
		count += w[0]
	}
	t.Logf("%d committed records produced (%d fit ev, %d malformed JSON, %d not of ev's shape); the view counts %d over %d keys, the PostgreSQL table has %d rows",
		f.good+f.badJSON+f.badRow, f.good, f.badJSON, f.badRow, count, len(view), len(table))
	return problems
}

// viewRows reads the view agg from Lockstep (linearizable): per key, c and total.
func (f *pipelineFixture) viewRows(t *testing.T) map[string][2]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := f.cl.SQL().Query(ctx, "SELECT k, c, total FROM agg")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]int64{}
	for _, r := range rows.Rows {
		k, _ := r[0].(string)
		c, _ := r[1].(int64)
		s, _ := r[2].(int64)
		out[k] = [2]int64{c, s}
	}
	return out
}

// pgRows reads the sink's table agg from PostgreSQL.
func (f *pipelineFixture) pgRows(t *testing.T) map[string][2]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := f.db.Connect(t)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT k, c, total FROM agg`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]int64{}
	for rows.Next() {
		var k string
		var c, s int64
		if err := rows.Scan(&k, &c, &s); err != nil {
			t.Fatal(err)
		}
		if _, dup := out[k]; dup {
			t.Fatalf("PostgreSQL: key %q twice in agg", k)
		}
		out[k] = [2]int64{c, s}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// diffAgg lists where got and want differ (at most 5 keys named).
func diffAgg(gotName string, got map[string][2]int64, wantName string, want map[string][2]int64) []string {
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok || g != want[k] {
			bad = append(bad, fmt.Sprintf("key %s: count, sum %v, want %v (present %v)", k, g, want[k], ok))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("key %s: %v, not expected", k, got[k]))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s differs from %s at %d keys: %s", gotName, wantName, len(bad), strings.Join(bad[:min(5, len(bad))], "; "))}
}

// changelogPositions returns "partition/offset" of every record of the view's changelog.
func (f *pipelineFixture) changelogPositions(t *testing.T) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	desc, err := f.cl.Streams().Describe(ctx, "agg")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range desc.Partitions {
		for o := uint64(0); o < p.NextOffset; o++ {
			out[fmt.Sprintf("%d/%d", p.Partition, o)] = true
		}
	}
	return out
}

// checkTopic: topic out, read with read-committed isolation, holds every record of the
// view's changelog exactly once.
func (f *pipelineFixture) checkTopic(t *testing.T) []string {
	t.Helper()
	want := f.changelogPositions(t)
	seen := map[string]int{}
	var problems []string
	for _, p := range f.topicPositions(t, "out") {
		seen[p]++
		if seen[p] == 2 {
			problems = append(problems, fmt.Sprintf("topic out: changelog record %s more than once", p))
		}
		if !want[p] {
			problems = append(problems, fmt.Sprintf("topic out: record %s is not in the changelog", p))
		}
	}
	if len(seen) != len(want) {
		problems = append(problems, fmt.Sprintf("topic out: %d distinct changelog records, the changelog has %d", len(seen), len(want)))
	}
	if len(problems) > 5 {
		problems = append(problems[:5], fmt.Sprintf("... and %d more", len(problems)-5))
	}
	if len(problems) == 0 {
		t.Logf("topic out: %d records, each of the view's changelog exactly once (read-committed)", len(seen))
	}
	return problems
}

// topicPositions reads topic with read-committed isolation up to every partition's last
// stable offset and returns the stream positions "partition/offset" of its records (the
// Kafka sink's headers).
func (f *pipelineFixture) topicPositions(t *testing.T, topic string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	start, left := map[int32]kgo.Offset{}, 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			start[o.Partition] = kgo.NewOffset().AtStart()
			left++
		}
	})
	if left == 0 {
		return nil
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	var out []string
	for left > 0 {
		fs := kc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, _ := ends.Lookup(topic, r.Partition)
			if r.Offset >= end.Offset {
				return
			}
			if !r.Attrs.IsControl() {
				var part, off string
				for _, h := range r.Headers {
					switch h.Key {
					case "lockstep-partition":
						part = string(h.Value)
					case "lockstep-offset":
						off = string(h.Value)
					}
				}
				out = append(out, part+"/"+off)
			}
			if r.Offset == end.Offset-1 {
				left--
			}
		})
	}
	return out
}

// kafkaDeadLetter is the source's dead letter (client/kafka.DeadLetter's encoding).
type kafkaDeadLetter struct {
	Partition int32 `msgpack:"partition"`
	Offset    int64 `msgpack:"offset"`
}

// processorDeadLetter is a processor's dead letter (partition.DeadLetter's encoding).
type processorDeadLetter struct {
	Processor string `msgpack:"p"`
	Offset    uint64 `msgpack:"o"`
	Tick      bool   `msgpack:"tick,omitempty"`
}

// checkDeadLetters: the source's dead-letter stream holds each malformed JSON record
// once (by Kafka position), ev.dead each committed object that does not fit ev once (by
// processor and offset of ev), and nothing else.
func (f *pipelineFixture) checkDeadLetters(t *testing.T) []string {
	t.Helper()
	var problems []string
	kseen := map[kafkaDeadLetter]bool{}
	for _, v := range f.streamContentsOf(t, pipelineKafkaDead) {
		var d kafkaDeadLetter
		if err := msgpack.Unmarshal([]byte(v), &d); err != nil {
			t.Fatalf("%s: %v", pipelineKafkaDead, err)
		}
		if kseen[d] {
			problems = append(problems, fmt.Sprintf("%s: Kafka record %d/%d dead-lettered twice", pipelineKafkaDead, d.Partition, d.Offset))
		}
		kseen[d] = true
	}
	if len(kseen) != f.badJSON {
		problems = append(problems, fmt.Sprintf("%s: %d distinct dead letters, %d malformed records were committed", pipelineKafkaDead, len(kseen), f.badJSON))
	}
	pseen := map[string]bool{}
	for _, v := range f.streamContentsOf(t, "ev.dead") {
		var d processorDeadLetter
		if err := msgpack.Unmarshal([]byte(v), &d); err != nil {
			t.Fatalf("ev.dead: %v", err)
		}
		id := fmt.Sprintf("%s@%d", d.Processor, d.Offset)
		if d.Tick || pseen[id] {
			problems = append(problems, fmt.Sprintf("ev.dead: %s twice or a tick (%v)", id, d.Tick))
		}
		pseen[id] = true
	}
	if len(pseen) != f.badRow {
		problems = append(problems, fmt.Sprintf("ev.dead: %d distinct dead letters, %d committed records do not fit ev", len(pseen), f.badRow))
	}
	return problems
}

// streamContentsOf returns the values of every record of stream, partition by partition.
func (f *pipelineFixture) streamContentsOf(t *testing.T, stream string) []string {
	t.Helper()
	return (&kafkaFixture{sinkFixture: f.sinkFixture}).streamContentsOf(t, stream)
}

// TestViewProcessorsDone holds waitQuiet's processor condition to the view's processors:
// the demo's, waiting forever on a stream the pipeline never creates, are no reason to
// wait (the first pipeline runs timed out on them), while a view processor that lags or
// waits is, and a node that reports none of the view's is not done.
func TestViewProcessorsDone(t *testing.T) {
	demo := client.ProcessorStatus{Processor: "demo.clicks.by_page", Input: "demo.clicks", Waiting: true}
	done := client.ProcessorStatus{Processor: "agg.by_key", Input: "ev", Position: 7, End: 7}
	for _, tc := range []struct {
		ps   []client.ProcessorStatus
		done bool
	}{
		{[]client.ProcessorStatus{done, demo}, true},
		{[]client.ProcessorStatus{done, {Processor: "agg.group", Input: "agg.by_key", Position: 3, End: 5, Lag: 2}}, false},
		{[]client.ProcessorStatus{done, {Processor: "agg.group", Input: "agg.by_key", Waiting: true}}, false},
		{[]client.ProcessorStatus{demo}, false},
	} {
		if err := viewProcessorsDone(tc.ps); (err == nil) != tc.done {
			t.Errorf("viewProcessorsDone(%+v) = %v, want done %v", tc.ps, err, tc.done)
		}
	}
}
