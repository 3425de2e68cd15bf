package window

import (
	"encoding/binary"
	"fmt"
	"reflect"

	"github.com/lockstepdb/lockstep/internal/canon"
	"github.com/lockstepdb/lockstep/partition"
)

// windowState is the stored state of one window, under key‖start in the State table.
type windowState[S any] struct {
	_msgpack struct{} `msgpack:",as_array"`
	End      int64    // the window's end; for Session it grows as the session merges
	Emitted  int      // results emitted so far: 0 until the window fires
	Value    S
}

// encodeState encodes st with msgpack in canonical form, so that equal states give equal
// bytes on every replica (the bytes are hashed, DESIGN.md invariant 1). scalar is
// scalarState of S: such a state encodes no map, so it is canonical as msgpack writes it.
// The result is in c's buffers: valid until c's next use.
func encodeState[S any](c *stateCodec, st *windowState[S], scalar bool) ([]byte, error) {
	c.w.b = c.w.b[:0]
	c.enc.Reset(&c.w)
	ok, err := encodeScalar(c, st)
	if !ok {
		err = c.enc.Encode(st)
	}
	b := c.w.b
	if err == nil && !scalar {
		c.canon, err = canon.Msgpack(c.canon[:0], b)
		b = c.canon
	}
	if err != nil {
		return nil, fmt.Errorf("window state: %w", err)
	}
	return b, nil
}

// scalarState reports whether a window state of type t is a bool, number or string
// without an encoder of its own: one that encodes no msgpack map (a struct encodes as
// one), so encodeState need not rewrite it.
func scalarState(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return !canon.MayHoldMap(t)
	}
	return false
}

// load reads the state of the window of key starting at start.
func (a *Aggregate[R, S]) load(tx *partition.Tx, key []byte, start int64) (windowState[S], bool, error) {
	var st windowState[S]
	b, ok := tx.Get(a.tables.State, stateKey(key, start))
	if !ok {
		return st, false, nil
	}
	if err := a.decodeState(b, &st); err != nil {
		return st, false, fmt.Errorf("%s %q@%d: %w", a.tables.State, key, start, err)
	}
	return st, true, nil
}

// decodeState decodes a window's state with Config.DecodeValue if it is set and takes
// b, else by reflection; the result shares no memory with b.
func (a *Aggregate[R, S]) decodeState(b []byte, st *windowState[S]) error {
	if a.cfg.DecodeValue != nil {
		if end, emitted, rest, ok := readEnvelope(b); ok {
			if v, after, err := a.cfg.DecodeValue(rest); err == nil && len(after) == 0 {
				st.End, st.Emitted, st.Value = end, emitted, v
				return nil
			}
		}
	}
	return decodeState(b, st)
}

// appendEnvelope appends what msgpack writes for windowState before its value: a
// 3-element array, End as an int64 (its 9-byte form) and Emitted as an int (its shortest).
func appendEnvelope(b []byte, end int64, emitted int) []byte {
	b = append(b, 0x93, 0xd3)
	b = binary.BigEndian.AppendUint64(b, uint64(end))
	switch e := uint64(emitted); {
	case e < 0x80:
		return append(b, byte(e))
	case e <= 0xff:
		return append(b, 0xcc, byte(e))
	case e <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(e))
	case e <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(e))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), e)
	}
}

// readEnvelope reads what appendEnvelope writes and returns the bytes after it.
func readEnvelope(b []byte) (end int64, emitted int, rest []byte, ok bool) {
	if len(b) < 11 || b[0] != 0x93 || b[1] != 0xd3 {
		return 0, 0, nil, false
	}
	end, b = int64(binary.BigEndian.Uint64(b[2:10])), b[10:]
	var e uint64
	switch c := b[0]; {
	case c < 0x80:
		e, b = uint64(c), b[1:]
	case c == 0xcc && len(b) >= 2:
		e, b = uint64(b[1]), b[2:]
	case c == 0xcd && len(b) >= 3:
		e, b = uint64(binary.BigEndian.Uint16(b[1:])), b[3:]
	case c == 0xce && len(b) >= 5:
		e, b = uint64(binary.BigEndian.Uint32(b[1:])), b[5:]
	default:
		return 0, 0, nil, false
	}
	return end, int(e), b, true
}

// decodeState decodes a window's state; the result shares no memory with b.
func decodeState[S any](b []byte, st *windowState[S]) error {
	c := stateCodecs.Get().(*stateCodec)
	defer stateCodecs.Put(c)
	if decodeScalar(c, b, st) {
		c.r.Reset(nil)
		return nil
	}
	c.r.Reset(b)
	c.dec.Reset(&c.r)
	// Not UsePreallocateValues, which msgpack.Unmarshal sets: it only changes where new
	// values are allocated (a goroutine per type fills a channel with them).
	err := c.dec.Decode(st)
	c.r.Reset(nil)
	if err != nil {
		return fmt.Errorf("%w: window state: %w", ErrCorrupt, err)
	}
	return nil
}

// save writes the state of the window of key starting at start.
func (a *Aggregate[R, S]) save(tx *partition.Tx, key []byte, start int64, st *windowState[S]) error {
	c := stateCodecs.Get().(*stateCodec)
	defer stateCodecs.Put(c)
	if a.cfg.AppendValue != nil {
		c.w.b = a.cfg.AppendValue(appendEnvelope(c.w.b[:0], st.End, st.Emitted), st.Value)
		return tx.Put(a.tables.State, stateKey(key, start), c.w.b) // Put copies it
	}
	b, err := encodeState(c, st, a.scalarState)
	if err != nil {
		return err
	}
	return tx.Put(a.tables.State, stateKey(key, start), b) // Put copies b
}

// create writes a new window's state and its rows in the fire and close queues.
func (a *Aggregate[R, S]) create(tx *partition.Tx, key []byte, start int64, st *windowState[S]) error {
	if err := a.save(tx, key, start, st); err != nil {
		return err
	}
	if st.Emitted == 0 {
		if err := tx.Put(a.tables.Fire, queueKey(st.End, key, start), nil); err != nil {
			return err
		}
	}
	return tx.Put(a.tables.Close, queueKey(st.End+a.cfg.AllowedLateness, key, start), nil)
}

// drop deletes a window's state and its queue rows.
func (a *Aggregate[R, S]) drop(tx *partition.Tx, key []byte, start int64, st *windowState[S]) error {
	if err := tx.Delete(a.tables.State, stateKey(key, start)); err != nil {
		return err
	}
	if err := tx.Delete(a.tables.Fire, queueKey(st.End, key, start)); err != nil {
		return err
	}
	return tx.Delete(a.tables.Close, queueKey(st.End+a.cfg.AllowedLateness, key, start))
}

// emit hands one result of the window to Emit.
func (a *Aggregate[R, S]) emit(tx *partition.Tx, key []byte, start int64, st *windowState[S], final, retracted bool) error {
	return a.cfg.Emit(tx, Result[S]{
		Key: key, Start: start, End: st.End, Value: st.Value,
		Revision: st.Emitted, Final: final, Retracted: retracted,
	})
}
