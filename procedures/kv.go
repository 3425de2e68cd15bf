package procedures

import (
	"bytes"
	"errors"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// KVTable is the table of the kv.* procedures: row key = the input's partition key, value
// = the stored bytes.
const KVTable = "kv"

func registerKV(r *Registry) error {
	return errors.Join(
		register(r, builtin.KVPut, kvPut, newKVPutArgs,
			Doc("key = row key; args KVPutArgs{v}; stores v; result bool: the key was new")),
		Register(r, builtin.KVGet, kvGet, ReadOnly(),
			Doc("key = row key; args none; result KVGetResult{v, f}")),
		Register(r, builtin.KVDelete, kvDelete,
			Doc("key = row key; args none; removes the row; result bool: it existed")),
		Register(r, builtin.KVCas, kvCas,
			Doc("key = row key; args KVCasArgs{o, oa, n}; stores n if the value is o (absent with oa); result KVCasResult{s, f, c}")),
	)
}

func kvPut(tx *partition.Tx, a builtin.KVPutArgs) (bool, error) {
	key := tx.Key()
	if err := checkKey(key); err != nil {
		return false, err
	}
	_, existed := tx.Get(KVTable, key)
	if err := tx.Put(KVTable, key, a.Value); err != nil {
		return false, err
	}
	return !existed, nil
}

func kvGet(tx *partition.Tx, _ builtin.NoArgs) (builtin.KVGetResult, error) {
	key := tx.Key()
	if err := checkKey(key); err != nil {
		return builtin.KVGetResult{}, err
	}
	v, ok := tx.Get(KVTable, key)
	return builtin.KVGetResult{Value: v, Found: ok}, nil
}

func kvDelete(tx *partition.Tx, _ builtin.NoArgs) (bool, error) {
	key := tx.Key()
	if err := checkKey(key); err != nil {
		return false, err
	}
	_, existed := tx.Get(KVTable, key)
	if !existed {
		return false, nil
	}
	return true, tx.Delete(KVTable, key)
}

func kvCas(tx *partition.Tx, a builtin.KVCasArgs) (builtin.KVCasResult, error) {
	key := tx.Key()
	if err := checkKey(key); err != nil {
		return builtin.KVCasResult{}, err
	}
	cur, found := tx.Get(KVTable, key)
	var match bool
	if a.OldAbsent {
		match = !found
	} else {
		match = found && bytes.Equal(cur, a.Old)
	}
	if !match {
		return builtin.KVCasResult{Found: found, Current: cur}, nil
	}
	if err := tx.Put(KVTable, key, a.New); err != nil {
		return builtin.KVCasResult{}, err
	}
	return builtin.KVCasResult{Swapped: true, Found: true, Current: a.New}, nil
}
