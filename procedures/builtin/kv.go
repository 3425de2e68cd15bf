package builtin

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
