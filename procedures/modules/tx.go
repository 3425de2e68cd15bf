package modules

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/lockstepdb/lockstep/partition"
	"go.starlark.net/starlark"
)

// The tx surface: the only way a module's code reaches state, streams, time or
// randomness. Every method is a thin, charged wrapper of a partition.Tx method; values
// cross as canonical msgpack (values.go), keys as str or bytes (returned as str holding
// the key's bytes).

// txValue is the Starlark value of a partition.Tx.
type txValue struct {
	tx      *partition.Tx
	methods []*starlark.Builtin // by txMethods index, made on first use; reused by the pool
}

var txMethods = []string{"append", "delete", "emit", "get", "key", "now", "on", "partition", "partition_of", "partitions", "put", "rand", "scan"}

// txFnNames are "tx."+name for each method, for messages.
var txFnNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range txMethods {
		m[n] = "tx." + n
	}
	return m
}()

func (v *txValue) String() string        { return "<tx>" }
func (v *txValue) Type() string          { return "tx" }
func (v *txValue) Freeze()               {}
func (v *txValue) Truth() starlark.Bool  { return true }
func (v *txValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: tx") }
func (v *txValue) AttrNames() []string   { return slices.Clone(txMethods) }

// Attr returns the method name.
func (v *txValue) Attr(name string) (starlark.Value, error) { return v.method(name) }

func (v *txValue) method(name string) (starlark.Value, error) {
	i, ok := slices.BinarySearch(txMethods, name)
	if !ok {
		return nil, fmt.Errorf("tx has no .%s method", name)
	}
	if v.methods == nil {
		v.methods = make([]*starlark.Builtin, len(txMethods))
		for j, n := range txMethods {
			v.methods[j] = starlark.NewBuiltin(txFnNames[n], func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
				return v.call(t, n, args, kwargs)
			})
		}
	}
	return v.methods[i], nil
}

// keyBytes returns a key given as str or bytes.
func keyBytes(fn string, v starlark.Value) ([]byte, error) {
	// The Tx copies every key it keeps, so the key's bytes are lent, not copied.
	switch k := v.(type) {
	case starlark.String:
		return unsafe.Slice(unsafe.StringData(string(k)), len(k)), nil
	case starlark.Bytes:
		return unsafe.Slice(unsafe.StringData(string(k)), len(k)), nil
	}
	return nil, fmt.Errorf("%s: key is a %s, want str or bytes", fn, v.Type())
}

// call runs the tx method name.
func (v *txValue) call(t *starlark.Thread, name string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	b := budgetOf(t)
	if err := b.charge(1); err != nil {
		return nil, err
	}
	fn := txFnNames[name]
	tx := v.tx
	switch name {
	case "get":
		var table string
		var key, def starlark.Value = nil, starlark.None
		if t, ok := positional(args, kwargs, 2, 3); ok {
			table, key = t, args[1]
			if len(args) == 3 {
				def = args[2]
			}
		} else if err := starlark.UnpackArgs(fn, args, kwargs, "table", &table, "key", &key, "default?", &def); err != nil {
			return nil, err
		}
		k, err := keyBytes(fn, key)
		if err != nil {
			return nil, err
		}
		raw, ok := tx.Get(table, k)
		if !ok {
			return def, nil
		}
		val, err := decodeValue(b, raw)
		if err != nil {
			return nil, fmt.Errorf("%s: table %s: %w", fn, table, err)
		}
		return val, nil
	case "put":
		var table string
		var key, val starlark.Value
		if t, ok := positional(args, kwargs, 3, 3); ok {
			table, key, val = t, args[1], args[2]
		} else if err := starlark.UnpackArgs(fn, args, kwargs, "table", &table, "key", &key, "value", &val); err != nil {
			return nil, err
		}
		k, err := keyBytes(fn, key)
		if err != nil {
			return nil, err
		}
		enc := encoder{b: b, out: b.scratch()}
		if err := enc.encode(val, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", fn, err)
		}
		b.keep(enc.out)
		return starlark.None, tx.Put(table, k, enc.out)
	case "delete":
		var table string
		var key starlark.Value
		if err := starlark.UnpackArgs(fn, args, kwargs, "table", &table, "key", &key); err != nil {
			return nil, err
		}
		k, err := keyBytes(fn, key)
		if err != nil {
			return nil, err
		}
		return starlark.None, tx.Delete(table, k)
	case "scan":
		return v.scan(b, fn, args, kwargs)
	case "emit", "append":
		var stream string
		var key, val starlark.Value
		var timeMs int64
		if err := starlark.UnpackArgs(fn, args, kwargs, "stream", &stream, "key", &key, "value", &val, "time?", &timeMs); err != nil {
			return nil, err
		}
		k, err := keyBytes(fn, key)
		if err != nil {
			return nil, err
		}
		enc := encoder{b: b, out: b.scratch()}
		if err := enc.encode(val, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", fn, err)
		}
		b.keep(enc.out)
		if name == "emit" {
			return starlark.None, tx.Emit(stream, k, enc.out, timeMs)
		}
		off, err := tx.Append(stream, k, enc.out, timeMs)
		if err != nil {
			return nil, err
		}
		return starlark.MakeUint64(off), nil
	case "now":
		if err := starlark.UnpackArgs(fn, args, kwargs); err != nil {
			return nil, err
		}
		return starlark.MakeInt64(tx.Now().UnixMilli()), nil
	case "rand":
		var n starlark.Value = starlark.None
		if err := starlark.UnpackArgs(fn, args, kwargs, "n?", &n); err != nil {
			return nil, err
		}
		if n == starlark.None {
			return starlark.Float(tx.Rand().Float64()), nil
		}
		var bound int64
		if err := starlark.AsInt(n, &bound); err != nil || bound <= 0 {
			return nil, fmt.Errorf("%s: n must be a positive int", fn)
		}
		return starlark.MakeInt64(tx.Rand().Int64N(bound)), nil
	case "key":
		if err := starlark.UnpackArgs(fn, args, kwargs); err != nil {
			return nil, err
		}
		if tx.Key() == nil {
			return starlark.None, nil
		}
		return lent(tx.Key()), nil
	case "partition":
		return starlark.MakeInt(tx.Partition()), starlark.UnpackArgs(fn, args, kwargs)
	case "partitions":
		return starlark.MakeInt(tx.Partitions()), starlark.UnpackArgs(fn, args, kwargs)
	case "partition_of":
		var key starlark.Value
		if err := starlark.UnpackArgs(fn, args, kwargs, "key", &key); err != nil {
			return nil, err
		}
		k, err := keyBytes(fn, key)
		if err != nil {
			return nil, err
		}
		return starlark.MakeInt(tx.PartitionOf(k)), nil
	case "on":
		var p int
		if err := starlark.UnpackArgs(fn, args, kwargs, "partition", &p); err != nil {
			return nil, err
		}
		other, err := tx.On(p)
		if err != nil {
			return nil, err
		}
		return &txValue{tx: other}, nil
	}
	return nil, fmt.Errorf("tx has no .%s method", name)
}

// lent returns b as a string sharing b's memory, for bytes no one changes during the
// call (the input's key, a record's key and value) and values that do not outlive it:
// reading them costs no copy, so code that reads them in a loop takes no memory.
func lent(b []byte) starlark.String {
	if len(b) == 0 {
		return ""
	}
	return starlark.String(unsafe.String(&b[0], len(b)))
}

// positional returns the first argument as a string when the call has between lo and
// hi positional arguments, no keywords, and a string first: the common shape, parsed
// without UnpackArgs's allocations.
func positional(args starlark.Tuple, kwargs []starlark.Tuple, lo, hi int) (string, bool) {
	if len(kwargs) > 0 || len(args) < lo || len(args) > hi {
		return "", false
	}
	s, ok := args[0].(starlark.String)
	return string(s), ok
}

// scan is tx.scan(table, start=None, end=None, limit=None, reverse=False): a list of
// (key, value) tuples in key order, at most limit (at most MaxElements) of them.
func (v *txValue) scan(b *budget, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var table string
	var start, end, limit starlark.Value = starlark.None, starlark.None, starlark.None
	var reverse bool
	if err := starlark.UnpackArgs(fn, args, kwargs, "table", &table, "start?", &start, "end?", &end, "limit?", &limit, "reverse?", &reverse); err != nil {
		return nil, err
	}
	opts := partition.ScanOptions{Reverse: reverse, Limit: b.opts.MaxElements}
	var err error
	if start != starlark.None {
		if opts.Start, err = keyBytes(fn, start); err != nil {
			return nil, err
		}
	}
	if end != starlark.None {
		if opts.End, err = keyBytes(fn, end); err != nil {
			return nil, err
		}
	}
	if limit != starlark.None {
		var n int
		if err := starlark.AsInt(limit, &n); err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: limit must be a positive int", fn)
		}
		if n > b.opts.MaxElements {
			return nil, b.exceeded(limitElements, "%s limit %d, limit %d", fn, n, b.opts.MaxElements)
		}
		opts.Limit = n
	}
	var rows []starlark.Value
	var failed error
	err = v.tx.Scan(table, opts, func(key, value []byte) bool {
		val, err := decodeValue(b, value)
		if err == nil {
			err = b.charge(1 + len(key)/bytesPerStep)
		}
		if err != nil {
			failed = fmt.Errorf("%s: table %s: %w", fn, table, err)
			return false
		}
		rows = append(rows, starlark.Tuple{starlark.String(key), val})
		return true
	})
	if err == nil {
		err = failed
	}
	if err != nil {
		return nil, err
	}
	return starlark.NewList(rows), nil
}

// recordValue is the Starlark value of a processor's record: fields key (str), value
// (the decoded msgpack value, decoded when first read), raw (bytes), offset and time
// (event time, Unix ms).
type recordValue struct {
	rec     partition.Record
	b       *budget
	decoded starlark.Value
}

var recordFields = []string{"key", "offset", "raw", "time", "value"}

func (r *recordValue) String() string        { return fmt.Sprintf("<record %d>", r.rec.Offset) }
func (r *recordValue) Type() string          { return "record" }
func (r *recordValue) Freeze()               {}
func (r *recordValue) Truth() starlark.Bool  { return true }
func (r *recordValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: record") }
func (r *recordValue) AttrNames() []string   { return slices.Clone(recordFields) }

// Attr returns the field name.
func (r *recordValue) Attr(name string) (starlark.Value, error) {
	switch name {
	case "key":
		return lent(r.rec.Key), nil
	case "raw":
		return starlark.Bytes(lent(r.rec.Value)), nil
	case "offset":
		return starlark.MakeUint64(r.rec.Offset), nil
	case "time":
		return starlark.MakeInt64(r.rec.EventTime), nil
	case "value":
		if r.decoded == nil {
			v, err := decodeWith(r.b, r.rec.Value, true)
			if err != nil {
				return nil, fmt.Errorf("record %d: %w", r.rec.Offset, err)
			}
			r.decoded = v
		}
		return r.decoded, nil
	}
	return nil, fmt.Errorf("record has no .%s field", name)
}
