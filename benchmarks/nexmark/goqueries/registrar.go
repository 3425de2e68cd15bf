package goqueries

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/vmihailenco/msgpack/v5"
)

// registration is one processor to register.
type registration struct {
	name, input string
	fn          func(tx *partition.Tx, rec partition.Record) error
	opts        []procedures.ProcessorOption
}

// registrar collects a Register call's processors, so that they are checked together
// before any reaches the caller's registry.
type registrar struct{ regs []registration }

func (g *registrar) add(name, input string, fn func(tx *partition.Tx, rec partition.Record) error, opts ...procedures.ProcessorOption) {
	g.regs = append(g.regs, registration{name, input, fn, opts})
}

// commit registers every collected processor in r: first in an empty registry (names,
// outputs, cycles among themselves), then against r's names, then in r.
func (g *registrar) commit(r *procedures.Registry) error {
	scratch := procedures.New()
	for _, x := range g.regs {
		if err := procedures.RegisterProcessor(scratch, x.name, x.input, x.fn, x.opts...); err != nil {
			return err
		}
	}
	for _, p := range r.Processors() {
		for _, x := range g.regs {
			if p.Name == x.name {
				return fmt.Errorf("%w: %s", procedures.ErrDuplicateProcessor, x.name)
			}
		}
	}
	for _, x := range g.regs {
		if err := procedures.RegisterProcessor(r, x.name, x.input, x.fn, x.opts...); err != nil {
			return err
		}
	}
	return nil
}

// out declares a result stream, unbounded.
func out(name string) procedures.ProcessorOption {
	return procedures.Output(name, partition.StreamConfig{})
}

// keyOf is the record key of an id: its decimal text, as nexmark.Event.Key.
func keyOf(id int64) []byte { return strconv.AppendInt(nil, id, 10) }

// row is a result row: nexmark.Q0Row … Q8Row.
type row interface{ AppendEncode(b []byte) []byte }

// rowBufs holds the buffers rows are encoded into: Tx.Append copies the value.
var rowBufs = sync.Pool{New: func() any { return new([]byte) }}

// appendRow appends a result row, in the canonical layout, to stream on this partition.
func appendRow(tx *partition.Tx, stream string, key []byte, t int64, r row) error {
	buf := rowBufs.Get().(*[]byte)
	*buf = r.AppendEncode((*buf)[:0])
	_, err := tx.Append(stream, key, *buf, t)
	rowBufs.Put(buf)
	return err
}

// emitMsg sends an internal record across the exchange to the partition of key.
func emitMsg(tx *partition.Tx, stream string, key []byte, t int64, msg any) error {
	v, err := msgpack.Marshal(msg)
	if err != nil {
		return err
	}
	return tx.Emit(stream, key, v, t)
}

// decodeMsg decodes an internal record; a bad one fails the record.
func decodeMsg(rec partition.Record, msg any) error {
	if err := msgpack.Unmarshal(rec.Value, msg); err != nil {
		return fmt.Errorf("nexmark: internal record at offset %d: %w", rec.Offset, err)
	}
	return nil
}

// parseKey reads a key written by keyOf.
func parseKey(k []byte) (int64, error) {
	n, err := strconv.ParseInt(string(k), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("nexmark: key %q: %w", k, err)
	}
	return n, nil
}
