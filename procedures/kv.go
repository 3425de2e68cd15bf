package procedures

import (
	"bytes"
	"errors"

	"github.com/lockstepdb/lockstep/partition"
)

// KVTable is the table of the kv.* procedures: row key = the input's partition key, value
// = the stored bytes.
const KVTable = "kv"

// KVPutArgs are the arguments of kv.put.
type KVPutArgs struct {
	// Value is stored under the input's partition key; nil stores an empty value.
	Value []byte `msgpack:"v"`
}

// KVGetResult is the result of kv.get.
type KVGetResult struct {
	// Value is the stored value; nil when the key is absent.
	Value []byte `msgpack:"v"`
	// Found reports whether the key holds a value.
	Found bool `msgpack:"f"`
}

// KVCasArgs are the arguments of kv.cas.
type KVCasArgs struct {
	// Old is the value the key must hold for the swap to happen (ignored with OldAbsent).
	Old []byte `msgpack:"o"`
	// OldAbsent makes the swap happen only if the key holds no value.
	OldAbsent bool `msgpack:"oa"`
	// New is the value stored when the condition holds.
	New []byte `msgpack:"n"`
}

// KVCasResult is the result of kv.cas.
type KVCasResult struct {
	// Swapped reports whether New was stored.
	Swapped bool `msgpack:"s"`
	// Found reports whether the key holds a value after the call.
	Found bool `msgpack:"f"`
	// Current is the key's value after the call: New if Swapped, else the unchanged value
	// (nil when absent).
	Current []byte `msgpack:"c"`
}

func registerKV(r *Registry) error {
	return errors.Join(
		Register(r, "kv.put", kvPut,
			Doc("key = row key; args KVPutArgs{v}; stores v; result bool: the key was new")),
		Register(r, "kv.get", kvGet, ReadOnly(),
			Doc("key = row key; args none; result KVGetResult{v, f}")),
		Register(r, "kv.delete", kvDelete,
			Doc("key = row key; args none; removes the row; result bool: it existed")),
		Register(r, "kv.cas", kvCas,
			Doc("key = row key; args KVCasArgs{o, oa, n}; stores n if the value is o (absent with oa); result KVCasResult{s, f, c}")),
	)
}

func kvPut(tx *partition.Tx, a KVPutArgs) (bool, error) {
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

func kvGet(tx *partition.Tx, _ NoArgs) (KVGetResult, error) {
	key := tx.Key()
	if err := checkKey(key); err != nil {
		return KVGetResult{}, err
	}
	v, ok := tx.Get(KVTable, key)
	return KVGetResult{Value: v, Found: ok}, nil
}

func kvDelete(tx *partition.Tx, _ NoArgs) (bool, error) {
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

func kvCas(tx *partition.Tx, a KVCasArgs) (KVCasResult, error) {
	key := tx.Key()
	if err := checkKey(key); err != nil {
		return KVCasResult{}, err
	}
	cur, found := tx.Get(KVTable, key)
	var match bool
	if a.OldAbsent {
		match = !found
	} else {
		match = found && bytes.Equal(cur, a.Old)
	}
	if !match {
		return KVCasResult{Found: found, Current: cur}, nil
	}
	if err := tx.Put(KVTable, key, a.New); err != nil {
		return KVCasResult{}, err
	}
	return KVCasResult{Swapped: true, Found: true, Current: a.New}, nil
}
