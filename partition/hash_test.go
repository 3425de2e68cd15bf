package partition

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// kvProcs are procedures that take their table, key and value from the input:
// Procedure "put"/"del"/"append", Key the row key, Args "table\x00value".
func kvProcs() procs {
	split := func(args []byte) (string, []byte) {
		for i, c := range args {
			if c == 0 {
				return string(args[:i]), args[i+1:]
			}
		}
		return string(args), nil
	}
	return procs{
		"put": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			table, value := split(in.Args)
			return out, tx.Put(table, in.Key, value)
		},
		"del": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			table, _ := split(in.Args)
			return out, tx.Delete(table, in.Key)
		},
		"append": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			stream, record := split(in.Args)
			_, err := testAppend(tx, stream, record)
			return out, err
		},
		"put-fail": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			table, value := split(in.Args)
			if err := tx.Put(table, in.Key, value); err != nil {
				return out, err
			}
			return out, errHandler
		},
	}
}

func kv(proc, table, key, value string) Input {
	return Input{Procedure: proc, Key: []byte(key), Args: []byte(table + "\x00" + value)}
}

// stateHash runs inputs on a fresh one-partition engine and returns its hash, after
// checking it against a full recomputation.
func stateHash(t *testing.T, in ...Input) uint64 {
	t.Helper()
	e := newEngine(t, Config{Partitions: 1, ReplicatedTables: []string{"rep"}}, kvProcs())
	for i, r := range e.Execute(in) {
		if r.Err != nil && in[i].Procedure != "put-fail" {
			t.Fatalf("input %d (%s): %v", i, in[i].Procedure, r.Err)
		}
	}
	checkHashes(t, e)
	return e.Partitions()[0].Hash()
}

// TestHashSensitivity checks that the state hash (DESIGN.md invariant 6: divergence is
// detected) changes with a one-byte difference in any part of the state, and does not
// depend on the order rows were written in.
func TestHashSensitivity(t *testing.T) {
	base := []Input{
		kv("put", "t", "k1", "value-1"),
		kv("put", "t", "k2", "value-2"),
		kv("put", "u", "k1", "value-1"),
		kv("append", "s", "", "record-0"),
		kv("append", "s", "", "record-1"),
	}
	h0 := stateHash(t, base...)
	with := func(i int, in Input) []Input {
		c := append([]Input(nil), base...)
		c[i] = in
		return c
	}
	different := []struct {
		name string
		in   []Input
	}{
		{"value byte", with(0, kv("put", "t", "k1", "value-2"))},
		{"value length", with(0, kv("put", "t", "k1", "value-1\x00"))},
		{"empty value", with(0, kv("put", "t", "k1", ""))},
		{"key byte", with(0, kv("put", "t", "k3", "value-1"))},
		{"key length", with(0, kv("put", "t", "k1\x00", "value-1"))},
		{"table name byte", with(0, kv("put", "v", "k1", "value-1"))},
		{"table name length", with(0, kv("put", "tt", "k1", "value-1"))},
		{"replicated table of the same name", with(2, kv("put", "rep", "k1", "value-1"))},
		{"stream record byte", with(4, kv("append", "s", "", "record-2"))},
		{"stream record length", with(4, kv("append", "s", "", "record-1\x00"))},
		{"stream name", with(4, kv("append", "r", "", "record-1"))},
		{"stream record order", append(base[:3:3], kv("append", "s", "", "record-1"), kv("append", "s", "", "record-0"))},
		{"row swapped between tables", with(2, kv("put", "t", "k3", "value-1"))},
		{"row missing", base[1:]},
		{"record missing", base[:4]},
		{"extra row", append(base[:5:5], kv("put", "t", "k0", ""))},
		{"table row vs stream record", with(3, kv("put", "s", "\x00", "record-0"))},
	}
	seen := map[uint64]string{h0: "base"}
	for i, d := range different {
		h := stateHash(t, d.in...)
		if prev, ok := seen[h]; ok {
			t.Errorf("#%d %s: hash %016x equals that of %s", i, d.name, h, prev)
		}
		seen[h] = d.name
	}

	same := []struct {
		name string
		in   []Input
	}{
		{"rows in another order", []Input{base[2], base[1], base[0], base[3], base[4]}},
		{"overwritten", append([]Input{kv("put", "t", "k1", "x"), kv("put", "t", "k2", "")}, base...)},
		{"delete then re-put", append(base[:5:5], kv("del", "t", "k1", ""), kv("del", "u", "k1", ""),
			kv("put", "u", "k1", "value-1"), kv("put", "t", "k1", "value-1"))},
		{"put then delete an extra row", append(base[:5:5], kv("put", "t", "zz", "x"), kv("del", "t", "zz", ""))},
		{"failed inputs", append(base[:5:5], kv("put-fail", "t", "k1", "other"), kv("put-fail", "t", "k9", "new"))},
		{"deleting absent rows", append(base[:5:5], kv("del", "t", "nope", ""), kv("del", "none", "k1", ""))},
	}
	for i, s := range same {
		if h := stateHash(t, s.in...); h != h0 {
			t.Errorf("#%d %s: hash %016x, want %016x", i, s.name, h, h0)
		}
	}
	if h := stateHash(t); h != 0 {
		t.Errorf("empty partition hash = %016x, want 0", h)
	}
}

// randomKV returns n random table and stream operations drawn from a small key space, so
// that overwrites and deletes of existing rows are common.
func randomKV(r *rand.Rand, n, parts int) []Input {
	in := make([]Input, n)
	for i := range in {
		table := fmt.Sprintf("t%d", r.IntN(3))
		key := fmt.Sprintf("k%d", r.IntN(20))
		value := fmt.Sprintf("v%d", r.IntN(1000))
		switch x := r.IntN(10); {
		case x < 5:
			in[i] = kv("put", table, key, value)
		case x < 7:
			in[i] = kv("del", table, key, "")
		case x < 9:
			in[i] = kv("append", fmt.Sprintf("s%d", r.IntN(2)), "", value)
		default:
			in[i] = kv("put-fail", table, key, value)
		}
		in[i].Partition = r.IntN(parts)
		in[i].Seq = uint64(i)
	}
	return in
}

// TestHashIncremental checks that the incrementally maintained hash equals a recomputation
// after every batch of random changes, and that two engines fed the same inputs agree.
func TestHashIncremental(t *testing.T) {
	const parts = 3
	r := rand.New(rand.NewPCG(1, 2))
	a := newEngine(t, Config{Partitions: parts}, kvProcs())
	b := newEngine(t, Config{Partitions: parts, Sequential: true}, kvProcs())
	for batch := 0; batch < 50; batch++ {
		in := randomKV(r, 1+r.IntN(100), parts)
		ra, rb := exec(a, in...), exec(b, in...)
		if fmt.Sprint(ra) != fmt.Sprint(rb) {
			t.Fatalf("batch %d: results differ:\n%v\n%v", batch, ra, rb)
		}
		checkHashes(t, a)
		checkHashes(t, b)
		if ha, hb := a.Hashes(), b.Hashes(); fmt.Sprint(ha) != fmt.Sprint(hb) {
			t.Fatalf("batch %d: hashes differ: %x vs %x", batch, ha, hb)
		}
	}
	if da, db := dump(a), dump(b); da != db {
		t.Fatalf("states differ:\n%s\n%s", da, db)
	}
}
