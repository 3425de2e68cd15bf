package partition

import (
	"bytes"
	"unsafe"

	"github.com/tidwall/btree"
)

// row is one key/value pair of a table. Keys are immutable strings; values are never
// mutated after they are stored (a Put stores a fresh copy), so a read may hand out the
// slice without copying.
type row struct {
	key   string
	value []byte
	hash  uint64 // rowHash of the row, kept so a change subtracts it without rehashing
}

func rowLess(a, b row) bool { return a.key < b.key }

// table is one named, ordered table of one partition.
type table struct {
	name       string
	ns         uint64 // namespace hash, see hash.go
	replicated bool
	tree       *btree.BTreeG[row]
	hint       btree.PathHint
	sum        uint64 // sum of every row's hash: this table's share of the partition hash
}

func newTable(name string, replicated bool) *table {
	kind := byte(kindTable)
	if replicated {
		kind = kindReplicated
	}
	return &table{
		name:       name,
		ns:         namespaceHash(kind, name),
		replicated: replicated,
		tree:       btree.NewBTreeGOptions(rowLess, btree.Options{NoLocks: true}),
	}
}

// bytesAsString views b as a string without copying, for lookups only: the result must
// not be stored.
func bytesAsString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func (t *table) get(key []byte) ([]byte, bool) {
	r, ok := t.tree.GetHint(row{key: bytesAsString(key)}, &t.hint)
	return r.value, ok
}

// put stores value (already copied by the caller) under key and returns the stored key,
// which stays valid after the caller's key slice is reused, and the previous value. An
// existing key keeps its stored string, so overwriting a row allocates nothing for the key.
func (t *table) put(key []byte, value []byte) (stored string, old []byte, existed bool) {
	h := rowHash(t.ns, key, value)
	t.sum += h
	prev, ok := t.tree.GetHint(row{key: bytesAsString(key)}, &t.hint)
	if ok {
		t.sum -= prev.hash
		t.tree.SetHint(row{key: prev.key, value: value, hash: h}, &t.hint)
		return prev.key, prev.value, true
	}
	stored = string(key)
	t.tree.SetHint(row{key: stored, value: value, hash: h}, &t.hint)
	return stored, nil, false
}

// delete removes key and returns the stored key and value it had.
func (t *table) delete(key []byte) (stored string, old []byte, existed bool) {
	prev, ok := t.tree.DeleteHint(row{key: bytesAsString(key)}, &t.hint)
	if ok {
		t.sum -= prev.hash
	}
	return prev.key, prev.value, ok
}

// ScanOptions selects an ordered key range of a table.
type ScanOptions struct {
	// Start is the first key of the range (inclusive); nil means the smallest key.
	Start []byte
	// End is the key the range stops before (exclusive); nil means past the largest key.
	End []byte
	// Reverse visits keys in descending order, from the largest key below End down to Start.
	Reverse bool
	// Limit is the largest number of rows visited; 0 means no limit.
	Limit int
}

// scan visits rows in the range in order until fn returns false or Limit rows were seen.
func (t *table) scan(opts ScanOptions, fn func(key, value []byte) bool) {
	n := 0
	visit := func(r row) bool {
		k := unsafe.Slice(unsafe.StringData(r.key), len(r.key))
		if !opts.Reverse && opts.End != nil && bytes.Compare(k, opts.End) >= 0 {
			return false
		}
		if opts.Reverse && opts.Start != nil && bytes.Compare(k, opts.Start) < 0 {
			return false
		}
		if !fn(k, r.value) {
			return false
		}
		n++
		return opts.Limit <= 0 || n < opts.Limit
	}
	if !opts.Reverse {
		if opts.Start == nil {
			t.tree.Scan(visit)
			return
		}
		t.tree.Ascend(row{key: bytesAsString(opts.Start)}, visit)
		return
	}
	if opts.End == nil {
		t.tree.Reverse(visit)
		return
	}
	// Descend starts at the pivot inclusive; End is exclusive.
	t.tree.Descend(row{key: bytesAsString(opts.End)}, func(r row) bool {
		if r.key == bytesAsString(opts.End) {
			return true
		}
		return visit(r)
	})
}

// hash recomputes the table's contribution to the partition hash from every row.
func (t *table) hash() uint64 {
	var sum uint64
	t.tree.Scan(func(r row) bool {
		sum += rowHash(t.ns, unsafe.Slice(unsafe.StringData(r.key), len(r.key)), r.value)
		return true
	})
	return sum
}
