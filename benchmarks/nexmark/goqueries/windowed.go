package goqueries

import (
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/window"
	"github.com/vmihailenco/msgpack/v5"
)

// Helpers of the windowed queries (q5, q7, q8): a repartitioning step stamps each record
// with the exchange watermark (window.Source.Observe) and the window step judges it
// against the stamp (window.Aggregate.ProcessStamped), as the click pipeline does.

// stamped is the envelope of a record sent across a windowed query's exchange: the
// event time, the stamp, and the query's own fields.
type stamped[T any] struct {
	Time  int64 `msgpack:"t"`
	Stamp int64 `msgpack:"w"`
	Msg   T     `msgpack:"m"`
}

// newSource is the Source of a windowed query's exchange stream.
func newSource(c Config, stream string) (*window.Source, error) {
	return window.NewSource(window.SourceConfig{Stream: stream, OutOfOrderness: c.OutOfOrderness.Milliseconds(),
		IdleTimeout: c.IdleTimeout.Milliseconds()})
}

// emitStamped sends msg of event time t across the exchange to key's partition, stamped.
func emitStamped[T any](tx *partition.Tx, src *window.Source, stream string, key []byte, t int64, msg T) error {
	stamp, err := src.Observe(tx, t)
	if err != nil {
		return err
	}
	return emitMsg(tx, stream, key, t, &stamped[T]{Time: t, Stamp: stamp, Msg: msg})
}

// processStamped feeds a stamped record to agg.
func processStamped[T, S any](tx *partition.Tx, agg *window.Aggregate[T, S], rec partition.Record) error {
	var s stamped[T]
	if err := decodeMsg(rec, &s); err != nil {
		return err
	}
	return agg.ProcessStamped(tx, rec.Key, s.Time, s.Stamp, s.Msg)
}

// lateTo returns a Late hook appending each late record, msgpack-encoded, to stream.
func lateTo[T any](stream string) func(tx *partition.Tx, l window.LateRecord[T]) error {
	return func(tx *partition.Tx, l window.LateRecord[T]) error {
		v, err := msgpack.Marshal(&l.Value)
		if err != nil {
			return err
		}
		_, err = tx.Append(stream, l.Key, v, l.EventTime)
		return err
	}
}
