package procedures

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// CounterTable is the table of the counter.* procedures: row key = counter name, value =
// the count as an 8-byte big-endian int64.
const CounterTable = "counter"

// ErrCounterOverflow is returned by counter.add when the new value would not fit in an
// int64; the counter keeps its value.
var ErrCounterOverflow = errors.New("counter overflow")

func registerCounter(r *Registry) error {
	return errors.Join(
		register(r, builtin.CounterAdd, counterAdd, newCounterAddArgs,
			Doc("key = counter name; args CounterAddArgs{d}; adds d (overflow is an error); result int64: the new value")),
		Register(r, builtin.CounterGet, counterGet, ReadOnly(),
			Doc("key = counter name; args none; result int64: the value, 0 if absent")),
	)
}

func counterAdd(tx *partition.Tx, a builtin.CounterAddArgs) (int64, error) {
	key := tx.Key()
	if err := checkKey(key); err != nil {
		return 0, err
	}
	// One descent of the table: the counter is read and written by Update, not Get and Put.
	var n int64
	err := tx.Update(CounterTable, key, 8, func(dst, old []byte, found bool) error {
		var cur int64
		if found {
			var err error
			if cur, err = decodeInt64(CounterTable, old); err != nil {
				return err
			}
		}
		var ok bool
		if n, ok = addInt64(cur, a.Delta); !ok {
			return fmt.Errorf("%d + %d: %w", cur, a.Delta, ErrCounterOverflow)
		}
		binary.BigEndian.PutUint64(dst, uint64(n))
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func counterGet(tx *partition.Tx, _ builtin.NoArgs) (int64, error) {
	key := tx.Key()
	if err := checkKey(key); err != nil {
		return 0, err
	}
	n, _, err := getInt64(tx, CounterTable, key)
	return n, err
}
