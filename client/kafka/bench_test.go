package kafka_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// benchRecords is the number of 100-byte records each benchmark run moves.
const benchRecords = 200_000

// fillTopic produces benchRecords 100-byte records, spread over the topic's partitions.
func fillTopic(b *testing.B, brokers []string, partitions int) {
	b.Helper()
	kc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("in"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer kc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range benchRecords {
		p := int32(i % partitions)
		kc.Produce(ctx, &kgo.Record{Partition: p, Value: recordValue(p, i/partitions)}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := kc.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkKafkaToLockstep measures Kafka (kfake, in this process) → Lockstep (one
// in-process node) records/s with 100-byte records, and, as the baseline that bounds
// it, how fast a plain read-committed franz-go consumer reads the same records from
// kfake. Run: go test -run '^$' -bench KafkaToLockstep -benchtime 1x ./client/kafka/
func BenchmarkKafkaToLockstep(b *testing.B) {
	const partitions = 4
	b.Run("kfake-consume", func(b *testing.B) {
		brokers := broker(b, partitions, "in")
		fillTopic(b, brokers, partitions)
		b.ResetTimer()
		for range b.N {
			kc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.ConsumeTopics("in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for n := 0; n < benchRecords; {
				fs := kc.PollFetches(context.Background())
				if err := fs.Err0(); err != nil {
					b.Fatal(err)
				}
				n += fs.NumRecords()
			}
			b.ReportMetric(float64(benchRecords)/time.Since(start).Seconds(), "records/s")
			kc.Close()
		}
	})
	b.Run("source", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			brokers := broker(b, partitions, "in")
			cl := lockstep(b, "in", "in.dead")
			fillTopic(b, brokers, partitions)
			cfg := sourceConfig(b, brokers, "w")
			cfg.BatchRecords = 4000
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			b.StartTimer()
			start := time.Now()
			w := startWorker(b, cl, cfg)
			waitCaughtUp(b, cl, brokers)
			elapsed := time.Since(start)
			b.StopTimer()
			if err := w.stop(); err != nil {
				b.Fatal(err)
			}
			if n := len(readStream(b, cl, "in")); n != benchRecords {
				b.Fatalf("%d records in the stream, want %d", n, benchRecords)
			}
			b.ReportMetric(float64(benchRecords)/elapsed.Seconds(), "records/s")
		}
	})
}
