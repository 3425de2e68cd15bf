package goqueries

import (
	"encoding/binary"

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
	v, err := appendStamped(nil, t, stamp, msg)
	if err != nil {
		return err
	}
	return tx.Emit(stream, key, v, t)
}

// processStamped feeds a stamped record to agg.
func processStamped[T, S any](tx *partition.Tx, agg *window.Aggregate[T, S], rec partition.Record) error {
	var s stamped[T]
	if !decodeStamped(rec.Value, &s) {
		if err := decodeMsg(rec, &s); err != nil {
			return err
		}
	}
	return agg.ProcessStamped(tx, rec.Key, s.Time, s.Stamp, s.Msg)
}

// stampedHead is where a stamped record's msg starts: msgpack writes the struct as a
// map of 3, the two times as 9-byte int64s, then the key "m".
const stampedHead = 25

// appendStamped appends what msgpack.Marshal(&stamped[T]{t, stamp, msg}) writes,
// without reflection for the envelope (and for an empty msg).
func appendStamped[T any](b []byte, t, stamp int64, msg T) ([]byte, error) {
	b = append(b, 0x83, 0xa1, 't', 0xd3)
	b = binary.BigEndian.AppendUint64(b, uint64(t))
	b = append(b, 0xa1, 'w', 0xd3)
	b = binary.BigEndian.AppendUint64(b, uint64(stamp))
	b = append(b, 0xa1, 'm')
	if _, empty := any(msg).(struct{}); empty {
		return append(b, 0x80), nil
	}
	m, err := msgpack.Marshal(&msg)
	return append(b, m...), err
}

// decodeStamped decodes a record appendStamped wrote into s, and reports false for any
// other bytes (which the caller gives to msgpack).
func decodeStamped[T any](b []byte, s *stamped[T]) bool {
	if len(b) <= stampedHead || b[0] != 0x83 || b[1] != 0xa1 || b[2] != 't' || b[3] != 0xd3 ||
		b[12] != 0xa1 || b[13] != 'w' || b[14] != 0xd3 || b[23] != 0xa1 || b[24] != 'm' {
		return false
	}
	s.Time = int64(binary.BigEndian.Uint64(b[4:12]))
	s.Stamp = int64(binary.BigEndian.Uint64(b[15:23]))
	m := b[stampedHead:]
	if _, empty := any(s.Msg).(struct{}); empty {
		return len(m) == 1 && m[0] == 0x80
	}
	return msgpack.Unmarshal(m, &s.Msg) == nil
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
