package window

import (
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
	if err := decodeState(b, &st); err != nil {
		return st, false, fmt.Errorf("%s %q@%d: %w", a.tables.State, key, start, err)
	}
	return st, true, nil
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
