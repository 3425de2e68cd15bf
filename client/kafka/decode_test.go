package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"
)

// TestSourceMalformedRecords brings JSON records in with FormatJSON, a third of them
// malformed in different ways, killing the worker after its first batch: every valid
// record must be in the stream as a msgpack map, every malformed one in the dead-letter
// stream with its offset and reason, each exactly once (nothing lost, nothing doubled),
// and the stored offsets at the end of the topic. The planted bug
// lockstep_kafka_splitstep doubles the first batch.
func TestSourceMalformedRecords(t *testing.T) {
	brokers := broker(t, 1, "in")
	cl := lockstep(t, "in", "in.dead")
	kc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	bad := []string{`{"n": 1`, `[1, 2]`, `null`, `"text"`, `{"a": 1} {"b": 2}`, "\xff\xfe"}
	const n = 900
	var recs []*kgo.Record
	wantBad := map[int64]bool{}
	for i := range n {
		v := fmt.Sprintf(`{"i": %d, "name": "r%d", "f": 0.5, "tags": ["x", "y"]}`, i, i)
		if i%3 == 1 {
			v = bad[i%len(bad)]
			wantBad[int64(i)] = true
		}
		recs = append(recs, &kgo.Record{Value: []byte(v)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cfg := sourceConfig(t, brokers, "w")
	cfg.Format, cfg.BatchRecords = kafka.FormatJSON, 200
	wctx, wcancel := context.WithCancel(context.Background())
	var once sync.Once
	killed := make(chan struct{})
	kafka.SetAfterAppend(&cfg, func(int32, int64) { once.Do(func() { wcancel(); close(killed) }) })
	first := startWorkerCtx(t, wctx, wcancel, cl, cfg)
	<-killed
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	cfg = sourceConfig(t, brokers, "w")
	cfg.Format = kafka.FormatJSON
	w := startWorker(t, cl, cfg)
	waitCaughtUp(t, cl, brokers)
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}

	next := 0
	for _, r := range readStream(t, cl, "in") {
		for wantBad[int64(next)] {
			next++
		}
		var m map[string]any
		if err := msgpack.Unmarshal(r.Data, &m); err != nil {
			t.Fatalf("record %d: not msgpack: %v", next, err)
		}
		if fmt.Sprint(m["i"]) != fmt.Sprint(next) || m["name"] != fmt.Sprintf("r%d", next) || m["f"] != 0.5 {
			t.Fatalf("record %d: got %v", next, m)
		}
		next++
	}
	if next != n {
		t.Fatalf("valid records up to %d, want %d", next, n)
	}
	seen := map[int64]bool{}
	var reason string
	for _, r := range readStream(t, cl, "in.dead") {
		var d kafka.DeadLetter
		if err := msgpack.Unmarshal(r.Data, &d); err != nil {
			t.Fatal(err)
		}
		switch {
		case !wantBad[d.Offset] || seen[d.Offset]:
			t.Fatalf("dead letter of offset %d: malformed %t, seen before %t", d.Offset, wantBad[d.Offset], seen[d.Offset])
		case !bytes.Equal(d.Value, []byte(bad[d.Offset%int64(len(bad))])) || !strings.Contains(d.Reason, "malformed"):
			t.Fatalf("dead letter of offset %d: value %q, reason %q", d.Offset, d.Value, d.Reason)
		case string(r.Key) != fmt.Sprintf("in/0/%d", d.Offset):
			t.Fatalf("dead letter key %q", r.Key)
		}
		seen[d.Offset] = true
		reason = d.Reason
	}
	if len(seen) != len(wantBad) {
		t.Fatalf("%d dead letters, want %d", len(seen), len(wantBad))
	}
	t.Logf("%d records in, %d dead letters, e.g. reason %q", n-len(wantBad), len(seen), reason)
}
