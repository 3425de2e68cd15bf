package procedures

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
)

// ErrCorruptValue is returned when a built-in finds a stored value it did not write in its
// own encoding (for example a counter row that is not 8 bytes). Only a procedure that
// writes a built-in's table with another encoding can cause it.
var ErrCorruptValue = errors.New("stored value has the wrong encoding")

// RegisterBuiltins registers every built-in procedure (kv.*, counter.*, bank.*, voter.*,
// stream.*, group.*, source.*) and the processors of the built-in click pipeline (DefaultClickPipeline) in r,
// and declares the replicated tables they use. It fails if a name is
// already registered, e.g. when called twice on one registry.
func RegisterBuiltins(r *Registry) error {
	for _, register := range []func(*Registry) error{
		registerKV,
		registerCounter,
		registerBank,
		registerVoter,
		registerStream,
		registerGroup,
		registerSource,
		func(r *Registry) error { return RegisterClickPipeline(r, DefaultClickPipeline) },
	} {
		if err := register(r); err != nil {
			return err
		}
	}
	return nil
}

// Builtins returns a new registry holding exactly the built-in procedures. It panics only
// if the built-ins themselves are inconsistent (a programming error caught by tests).
func Builtins() *Registry {
	r := New()
	if err := RegisterBuiltins(r); err != nil {
		panic(fmt.Sprintf("procedures: built-ins do not register: %v", err))
	}
	return r
}

// checkKey checks a row key the way the Tx does, so read-only procedures reject the same
// keys as writing ones (DESIGN.md invariant 7).
func checkKey(key []byte) error {
	switch {
	case len(key) == 0:
		return fmt.Errorf("partition key: %w", partition.ErrEmptyKey)
	case len(key) > partition.MaxKeyBytes:
		return fmt.Errorf("partition key of %d bytes: %w", len(key), partition.ErrKeyTooLarge)
	}
	return nil
}

// getInt64 reads an 8-byte big-endian int64 row; an absent row reads as 0, false.
func getInt64(tx *partition.Tx, table string, key []byte) (int64, bool, error) {
	v, ok := tx.Get(table, key)
	if !ok {
		return 0, false, nil
	}
	n, err := decodeInt64(table, v)
	return n, true, err
}

// decodeInt64 decodes a stored 8-byte big-endian int64.
func decodeInt64(table string, v []byte) (int64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("%s: %d-byte value: %w", table, len(v), ErrCorruptValue)
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// putInt64 stores n as an 8-byte big-endian int64 row.
func putInt64(tx *partition.Tx, table string, key []byte, n int64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	return tx.Put(table, key, b[:])
}

// addInt64 returns a+b, or false if the sum overflows an int64.
func addInt64(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// eachInScope scans table in every partition of the input's scope, in scope order, and
// stops at the first error fn returns.
func eachInScope(tx *partition.Tx, table string, opts partition.ScanOptions, fn func(k, v []byte) error) error {
	var err error
	visit := func(k, v []byte) bool {
		err = fn(k, v)
		return err == nil
	}
	for _, p := range tx.Scope() {
		view, verr := tx.On(p)
		if verr != nil {
			return verr
		}
		if serr := view.Scan(table, opts, visit); serr != nil {
			return serr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
