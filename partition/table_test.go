package partition

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestPutGetDelete(t *testing.T) {
	e := newEngine(t, Config{Partitions: 1}, procs{
		"put": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			return out, tx.Put("t", in.Key, in.Args)
		},
		"del": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			return out, tx.Delete("t", in.Key)
		},
		"get": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			v, ok := tx.Get("t", in.Key)
			if !ok {
				return append(out, "<absent>"...), nil
			}
			return append(out, v...), nil
		},
		"missing-table": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			if v, ok := tx.Get("nope", in.Key); ok {
				return out, fmt.Errorf("Get on a missing table = %q, true", v)
			}
			// Deleting from a missing table or an absent key is not an error.
			return out, tx.Delete("t", []byte("never-written"))
		},
	})
	tests := []struct {
		proc, key, args string
		want            string
	}{
		{"get", "a", "", "<absent>"},
		{"put", "a", "1", ""},
		{"get", "a", "", "1"},
		{"put", "a", "22", ""}, // overwrite
		{"get", "a", "", "22"},
		{"put", "b", "", ""}, // an empty value is a value
		{"get", "b", "", ""},
		{"del", "a", "", ""},
		{"get", "a", "", "<absent>"},
		{"del", "a", "", ""}, // deleting an absent key is fine
		{"missing-table", "a", "", ""},
		{"get", "b", "", ""},
	}
	for i, tt := range tests {
		r := run1(e, Input{Procedure: tt.proc, Key: []byte(tt.key), Args: []byte(tt.args)})
		if r.Err != "" || string(r.Value) != tt.want {
			t.Errorf("#%d %s(%s): got %v, want %q", i, tt.proc, tt.key, r, tt.want)
		}
	}
	p := e.Partitions()[0]
	if v, ok := p.Get("t", []byte("b")); !ok || len(v) != 0 {
		t.Errorf("Partition.Get(b) = %q, %t, want \"\", true", v, ok)
	}
	if _, ok := p.Get("t", []byte("a")); ok {
		t.Errorf("Partition.Get(a) found a deleted row")
	}
	if n := p.Rows("t"); n != 1 {
		t.Errorf("Rows(t) = %d, want 1", n)
	}
	checkHashes(t, e)
}

// TestPutCopiesValue checks that a Tx stores a copy: the caller may reuse its buffers.
func TestPutCopiesValue(t *testing.T) {
	buf := []byte("value")
	key := []byte("key")
	e := newEngine(t, Config{Partitions: 1}, procs{
		"put": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			if err := tx.Put("t", key, buf); err != nil {
				return out, err
			}
			_, err := testAppend(tx, "s", buf)
			copy(buf, "XXXXX")
			copy(key, "YYY")
			return out, err
		},
	})
	if err := runErr(e, Input{Procedure: "put"}); err != nil {
		t.Fatal(err)
	}
	p := e.Partitions()[0]
	if v, ok := p.Get("t", []byte("key")); !ok || string(v) != "value" {
		t.Errorf("Get(key) = %q, %t, want value, true", v, ok)
	}
	if recs, _, _ := p.ReadStream("s", 0, 1); len(recs) != 1 || string(recs[0].Value) != "value" {
		t.Errorf("ReadStream = %v, want one record \"value\"", recs)
	}
	checkHashes(t, e)
}

func TestScan(t *testing.T) {
	keys := []string{"a", "b", "ba", "c", "d", "e"}
	type scanReq struct {
		Opts ScanOptions
		Stop int // the callback returns false after this many rows; 0 = never
	}
	var req scanReq
	e := newEngine(t, Config{Partitions: 1}, procs{
		"load": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, k := range keys {
				if err := tx.Put("t", []byte(k), []byte(strings.ToUpper(k))); err != nil {
					return out, err
				}
			}
			return out, nil
		},
		"scan": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			n := 0
			err := tx.Scan("t", req.Opts, func(k, v []byte) bool {
				if !bytes.Equal(v, bytes.ToUpper(k)) {
					panic(fmt.Sprintf("row %q has value %q", k, v))
				}
				out = append(append(out, k...), ',')
				n++
				return req.Stop == 0 || n < req.Stop
			})
			return out, err
		},
	})
	if err := runErr(e, Input{Procedure: "load"}); err != nil {
		t.Fatal(err)
	}
	b := func(s string) []byte { return []byte(s) }
	tests := []struct {
		opts ScanOptions
		stop int
		want string
	}{
		{ScanOptions{}, 0, "a,b,ba,c,d,e,"},
		{ScanOptions{Limit: 0}, 0, "a,b,ba,c,d,e,"}, // Limit 0 = no limit
		{ScanOptions{Limit: 2}, 0, "a,b,"},
		{ScanOptions{Limit: 100}, 0, "a,b,ba,c,d,e,"},
		{ScanOptions{Start: b("b")}, 0, "b,ba,c,d,e,"}, // Start inclusive
		{ScanOptions{Start: b("bb")}, 0, "c,d,e,"},     // Start between keys
		{ScanOptions{End: b("c")}, 0, "a,b,ba,"},       // End exclusive
		{ScanOptions{End: b("bz")}, 0, "a,b,ba,"},      // End between keys
		{ScanOptions{Start: b("b"), End: b("d")}, 0, "b,ba,c,"},
		{ScanOptions{Start: b("b"), End: b("b")}, 0, ""}, // empty range
		{ScanOptions{Start: b("d"), End: b("b")}, 0, ""}, // inverted range
		{ScanOptions{Start: b("0"), End: b("a")}, 0, ""}, // before the first key
		{ScanOptions{Start: b("f")}, 0, ""},              // past the last key
		{ScanOptions{Start: b("b"), End: b("e"), Limit: 2}, 0, "b,ba,"},
		{ScanOptions{}, 3, "a,b,ba,"},      // callback stops
		{ScanOptions{Limit: 2}, 3, "a,b,"}, // limit before callback stop
		{ScanOptions{Reverse: true}, 0, "e,d,c,ba,b,a,"},
		{ScanOptions{Reverse: true, Limit: 2}, 0, "e,d,"},
		{ScanOptions{Reverse: true, End: b("d")}, 0, "c,ba,b,a,"},              // End exclusive
		{ScanOptions{Reverse: true, End: b("bz")}, 0, "ba,b,a,"},               // End between keys
		{ScanOptions{Reverse: true, Start: b("ba")}, 0, "e,d,c,ba,"},           // Start inclusive
		{ScanOptions{Reverse: true, Start: b("bb")}, 0, "e,d,c,"},              // Start between keys
		{ScanOptions{Reverse: true, Start: b("b"), End: b("d")}, 0, "c,ba,b,"}, // both bounds
		{ScanOptions{Reverse: true, Start: b("b"), End: b("d"), Limit: 1}, 0, "c,"},
		{ScanOptions{Reverse: true, Start: b("b"), End: b("b")}, 0, ""},
		{ScanOptions{Reverse: true, Start: b("d"), End: b("b")}, 0, ""},
		{ScanOptions{Reverse: true, End: b("a")}, 0, ""},
		{ScanOptions{Reverse: true, Start: b("z")}, 0, ""},
		{ScanOptions{Reverse: true}, 2, "e,d,"},
	}
	p := e.Partitions()[0]
	for i, tt := range tests {
		req = scanReq{Opts: tt.opts, Stop: tt.stop}
		r := run1(e, Input{Procedure: "scan"})
		if r.Err != "" || string(r.Value) != tt.want {
			t.Errorf("#%d Tx.Scan(%+v, stop %d): got %v, want %q", i, tt.opts, tt.stop, r, tt.want)
		}
		// Partition.Scan, the reader's path, sees the same range.
		var got string
		n := 0
		p.Scan("t", tt.opts, func(k, v []byte) bool {
			got += string(k) + ","
			n++
			return tt.stop == 0 || n < tt.stop
		})
		if got != tt.want {
			t.Errorf("#%d Partition.Scan(%+v, stop %d): got %q, want %q", i, tt.opts, tt.stop, got, tt.want)
		}
	}

	req = scanReq{}
	if r := run1(e, Input{Procedure: "scan", Args: nil}); r.Err != "" {
		t.Fatal(r.Err)
	}
	// Scanning a table that does not exist visits nothing and is not an error.
	e2 := newEngine(t, Config{Partitions: 1}, procs{
		"scan": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			return out, tx.Scan("none", ScanOptions{}, func(k, v []byte) bool { panic("visited a row") })
		},
	})
	if err := runErr(e2, Input{Procedure: "scan"}); err != nil {
		t.Errorf("Scan of a missing table: %v", err)
	}
}

// TestOwnWrites checks that reads and scans inside one Tx see its own puts and deletes
// before they commit.
func TestOwnWrites(t *testing.T) {
	e := newEngine(t, Config{Partitions: 1}, procs{
		"seed": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, k := range []string{"a", "b", "c"} {
				if err := tx.Put("t", []byte(k), []byte("old-"+k)); err != nil {
					return out, err
				}
			}
			return out, nil
		},
		"rw": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			steps := []func() error{
				func() error { return tx.Put("t", []byte("a"), []byte("new-a")) },
				func() error { return tx.Delete("t", []byte("b")) },
				func() error { return tx.Put("t", []byte("d"), []byte("new-d")) },
				func() error { return tx.Put("u", []byte("x"), []byte("new-x")) }, // a new table
			}
			for _, s := range steps {
				if err := s(); err != nil {
					return out, err
				}
			}
			for _, k := range []string{"a", "b", "c", "d"} {
				v, ok := tx.Get("t", []byte(k))
				out = fmt.Appendf(out, "%s=%s/%t ", k, v, ok)
			}
			v, ok := tx.Get("u", []byte("x"))
			out = fmt.Appendf(out, "u.x=%s/%t |", v, ok)
			err := tx.Scan("t", ScanOptions{}, func(k, v []byte) bool {
				out = fmt.Appendf(out, " %s=%s", k, v)
				return true
			})
			return out, err
		},
	})
	if err := runErr(e, Input{Procedure: "seed"}); err != nil {
		t.Fatal(err)
	}
	r := run1(e, Input{Procedure: "rw"})
	want := "a=new-a/true b=/false c=old-c/true d=new-d/true u.x=new-x/true | a=new-a c=old-c d=new-d"
	if r.Err != "" || string(r.Value) != want {
		t.Fatalf("got %v, want %q", r, want)
	}
	p := e.Partitions()[0]
	if got, want := rows(p, "t"), []string{"a=new-a", "c=old-c", "d=new-d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("committed rows = %v, want %v", got, want)
	}
	checkHashes(t, e)
}

// TestWriteDuringScan checks that a Put, Delete or Append from inside a Scan callback fails
// with ErrWriteDuringScan and changes nothing, and that writing works again after the scan.
func TestWriteDuringScan(t *testing.T) {
	writes := []struct {
		name string
		fn   func(tx *Tx) error
	}{
		{"put", func(tx *Tx) error { return tx.Put("t", []byte("z"), []byte("v")) }},
		{"put other table", func(tx *Tx) error { return tx.Put("other", []byte("z"), []byte("v")) }},
		{"delete", func(tx *Tx) error { return tx.Delete("t", []byte("a")) }},
		{"append", func(tx *Tx) error { _, err := testAppend(tx, "s", []byte("r")); return err }},
	}
	for i, w := range writes {
		var inside error
		e := newEngine(t, Config{Partitions: 1}, procs{
			"seed": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
				if err := tx.Put("t", []byte("a"), []byte("1")); err != nil {
					return out, err
				}
				return out, tx.Put("t", []byte("b"), []byte("2"))
			},
			"scan-write": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
				err := tx.Scan("t", ScanOptions{}, func(k, v []byte) bool {
					inside = w.fn(tx)
					return true
				})
				if err != nil {
					return out, err
				}
				// After the scan the same write succeeds; the test undoes it by failing.
				if err := w.fn(tx); err != nil {
					return out, fmt.Errorf("write after scan: %w", err)
				}
				return out, errors.New("undo")
			},
		})
		if err := runErr(e, Input{Procedure: "seed"}); err != nil {
			t.Fatal(err)
		}
		before := dump(e)
		if r := run1(e, Input{Procedure: "scan-write"}); r.Err != "undo" {
			t.Errorf("#%d %s: got %v, want err(undo)", i, w.name, r)
		}
		if !errors.Is(inside, ErrWriteDuringScan) {
			t.Errorf("#%d %s inside Scan: got %v, want %v", i, w.name, inside, ErrWriteDuringScan)
		}
		if after := dump(e); after != before {
			t.Errorf("#%d %s: state changed:\n%s\nwant\n%s", i, w.name, after, before)
		}
	}
}

// TestSizeLimits checks the typed errors for bad keys, values and names, and that the
// failed call changes nothing (DESIGN.md invariant 7: bad input gets a typed error and
// changes nothing else).
func TestSizeLimits(t *testing.T) {
	okKey := []byte("k")
	maxKey := bytes.Repeat([]byte("k"), MaxKeyBytes)
	maxValue := make([]byte, MaxValueBytes)
	maxName := strings.Repeat("n", MaxNameBytes)
	tests := []struct {
		name string
		op   func(tx *Tx) error
		want error // nil: the call must succeed
	}{
		{"put empty key", func(tx *Tx) error { return tx.Put("t", nil, []byte("v")) }, ErrEmptyKey},
		{"put zero-length key", func(tx *Tx) error { return tx.Put("t", []byte{}, []byte("v")) }, ErrEmptyKey},
		{"delete empty key", func(tx *Tx) error { return tx.Delete("t", nil) }, ErrEmptyKey},
		{"put key MaxKeyBytes+1", func(tx *Tx) error { return tx.Put("t", append(maxKey, 'k'), []byte("v")) }, ErrKeyTooLarge},
		{"delete key MaxKeyBytes+1", func(tx *Tx) error { return tx.Delete("t", append(maxKey, 'k')) }, ErrKeyTooLarge},
		{"put value MaxValueBytes+1", func(tx *Tx) error { return tx.Put("t", okKey, append(maxValue, 0)) }, ErrValueTooLarge},
		{"append record MaxValueBytes+1", func(tx *Tx) error { _, err := testAppend(tx, "s", append(maxValue, 0)); return err }, ErrValueTooLarge},
		{"put empty table name", func(tx *Tx) error { return tx.Put("", okKey, nil) }, ErrBadName},
		{"put table name MaxNameBytes+1", func(tx *Tx) error { return tx.Put(maxName+"n", okKey, nil) }, ErrBadName},
		{"delete empty table name", func(tx *Tx) error { return tx.Delete("", okKey) }, ErrBadName},
		{"append empty stream name", func(tx *Tx) error { _, err := testAppend(tx, "", nil); return err }, ErrBadName},
		{"append stream name MaxNameBytes+1", func(tx *Tx) error { _, err := testAppend(tx, maxName+"n", nil); return err }, ErrBadName},
		// The limits themselves are allowed.
		{"put key MaxKeyBytes", func(tx *Tx) error { return tx.Put("t", maxKey, []byte("v")) }, nil},
		{"put value MaxValueBytes", func(tx *Tx) error { return tx.Put("t", okKey, maxValue) }, nil},
		{"put table name MaxNameBytes", func(tx *Tx) error { return tx.Put(maxName, okKey, nil) }, nil},
		{"append record MaxValueBytes", func(tx *Tx) error { _, err := testAppend(tx, "s", maxValue); return err }, nil},
		{"append stream name MaxNameBytes", func(tx *Tx) error { _, err := testAppend(tx, maxName, nil); return err }, nil},
	}
	for i, tt := range tests {
		var opErr error
		e := newEngine(t, Config{Partitions: 1}, procs{
			"seed": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
				_, err := testAppend(tx, "s", []byte("r0"))
				if err != nil {
					return out, err
				}
				return out, tx.Put("t", okKey, []byte("seed"))
			},
			"op": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
				opErr = tt.op(tx)
				return out, nil // commit whatever the call did
			},
		})
		if err := runErr(e, Input{Procedure: "seed"}); err != nil {
			t.Fatal(err)
		}
		before := dump(e)
		if err := runErr(e, Input{Procedure: "op"}); err != nil {
			t.Fatalf("#%d %s: input failed: %v", i, tt.name, err)
		}
		if tt.want == nil {
			if opErr != nil {
				t.Errorf("#%d %s: got %v, want success", i, tt.name, opErr)
			}
			checkHashes(t, e)
			continue
		}
		if !errors.Is(opErr, tt.want) {
			t.Errorf("#%d %s: got %v, want %v", i, tt.name, opErr, tt.want)
		}
		if after := dump(e); after != before {
			t.Errorf("#%d %s: a rejected call changed state:\n%s\nwant\n%s", i, tt.name, after, before)
		}
	}
}

// TestTxDone checks that a Tx kept past its procedure's return refuses to work.
func TestTxDone(t *testing.T) {
	var kept *Tx
	e := newEngine(t, Config{Partitions: 1}, procs{
		"keep": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			kept = tx
			return out, tx.Put("t", []byte("a"), []byte("1"))
		},
	})
	if err := runErr(e, Input{Procedure: "keep"}); err != nil {
		t.Fatal(err)
	}
	before := dump(e)
	if err := kept.Put("t", []byte("b"), []byte("2")); !errors.Is(err, ErrTxDone) {
		t.Errorf("Put after return: got %v, want %v", err, ErrTxDone)
	}
	if err := kept.Delete("t", []byte("a")); !errors.Is(err, ErrTxDone) {
		t.Errorf("Delete after return: got %v, want %v", err, ErrTxDone)
	}
	if _, err := testAppend(kept, "s", nil); !errors.Is(err, ErrTxDone) {
		t.Errorf("Append after return: got %v, want %v", err, ErrTxDone)
	}
	if err := kept.Scan("t", ScanOptions{}, func(k, v []byte) bool { return true }); !errors.Is(err, ErrTxDone) {
		t.Errorf("Scan after return: got %v, want %v", err, ErrTxDone)
	}
	if v, ok := kept.Get("t", []byte("a")); ok {
		t.Errorf("Get after return = %q, true; want nothing", v)
	}
	if after := dump(e); after != before {
		t.Errorf("state changed:\n%s\nwant\n%s", after, before)
	}
}

// TestKeyOrder checks that tables order keys bytewise (as bytes.Compare), including keys
// that share long prefixes, are prefixes of each other, or hold zero and 0xff bytes, and
// that every stored key is found again.
func TestKeyOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]byte{0, 1, 'a', 'b', 0x7f, 0x80, 0xfe, 0xff})
		prefix := rapid.SliceOfN(alphabet, 0, 12).Draw(t, "shared prefix")
		keys := rapid.SliceOfNDistinct(
			rapid.Custom(func(t *rapid.T) string {
				return string(prefix) + string(rapid.SliceOfN(alphabet, 0, 12).Draw(t, "suffix"))
			}).Filter(func(k string) bool { return k != "" }),
			1, 60, rapid.ID[string]).Draw(t, "keys")
		e, err := NewEngine(Config{Partitions: 1}, procs{
			"load": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
				for _, k := range keys {
					if err := tx.Put("t", []byte(k), []byte(k)); err != nil {
						return out, err
					}
				}
				return out, nil
			},
		}.handler)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if r := e.Execute([]Input{{Procedure: "load"}}); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		want := sortedCopy(keys) // Go string order is bytewise
		p := e.Partitions()[0]
		var got []string
		p.Scan("t", ScanOptions{}, func(k, v []byte) bool {
			got = append(got, string(k))
			return true
		})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("scan order %q, want %q", got, want)
		}
		for _, k := range keys {
			if v, ok := p.Get("t", []byte(k)); !ok || string(v) != k {
				t.Fatalf("Get(%q) = %q, %t", k, v, ok)
			}
		}
		// A range scan from each key starts exactly there.
		for i, k := range want {
			var first string
			p.Scan("t", ScanOptions{Start: []byte(k), Limit: 1}, func(k, v []byte) bool {
				first = string(k)
				return true
			})
			if first != want[i] {
				t.Fatalf("scan from %q starts at %q", k, first)
			}
		}
		if h, r := p.Hash(), p.RecomputeHash(); h != r {
			t.Fatalf("Hash %x, RecomputeHash %x", h, r)
		}
	})
}

// TestReadModifyWrite checks the executor's read-then-write paths (a Get followed by a Put
// or Delete of the same or another key, in one input and across inputs, then undone) keep
// rows and the incremental hash right.
func TestReadModifyWrite(t *testing.T) {
	type step struct {
		op, key, value string
	}
	var script []step
	e := newEngine(t, Config{Partitions: 1}, procs{
		"run": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, s := range script {
				var err error
				switch s.op {
				case "get":
					v, ok := tx.Get("t", []byte(s.key))
					out = fmt.Appendf(out, "%s=%s/%t ", s.key, v, ok)
				case "put":
					err = tx.Put("t", []byte(s.key), []byte(s.value))
				case "del":
					err = tx.Delete("t", []byte(s.key))
				case "fail":
					err = errHandler
				}
				if err != nil {
					return out, err
				}
			}
			return out, nil
		},
	})
	tests := []struct {
		script []step
		want   string // result, or the error
		rows   []string
	}{
		{[]step{{"put", "a", "1"}, {"put", "b", "1"}}, "", []string{"a=1", "b=1"}},
		{[]step{{"get", "a", ""}, {"put", "a", "2"}, {"get", "a", ""}}, "a=1/true a=2/true ", []string{"a=2", "b=1"}},
		{[]step{{"get", "a", ""}, {"put", "b", "2"}, {"put", "a", "3"}}, "a=2/true ", []string{"a=3", "b=2"}},
		{[]step{{"get", "a", ""}, {"del", "a", ""}, {"put", "a", "4"}, {"get", "a", ""}}, "a=3/true a=4/true ", []string{"a=4", "b=2"}},
		{[]step{{"get", "a", ""}, {"del", "a", ""}, {"get", "a", ""}, {"put", "c", "1"}}, "a=4/true a=/false ", []string{"b=2", "c=1"}},
		{[]step{{"get", "x", ""}, {"put", "x", "1"}, {"get", "x", ""}}, "x=/false x=1/true ", []string{"b=2", "c=1", "x=1"}},
		{[]step{{"get", "b", ""}, {"put", "b", "9"}, {"get", "c", ""}, {"del", "c", ""}, {"fail", "", ""}}, "handler gave up", []string{"b=2", "c=1", "x=1"}},
		{[]step{{"get", "b", ""}, {"put", "b", "3"}}, "b=2/true ", []string{"b=3", "c=1", "x=1"}},
		{[]step{{"get", "c", ""}, {"put", "c", "2"}, {"get", "c", ""}, {"put", "c", "3"}, {"fail", "", ""}}, "handler gave up", []string{"b=3", "c=1", "x=1"}},
		{[]step{{"get", "c", ""}, {"put", "c", "4"}}, "c=1/true ", []string{"b=3", "c=4", "x=1"}},
	}
	for i, tt := range tests {
		script = tt.script
		r := run1(e, Input{Procedure: "run"})
		got := string(r.Value)
		if r.Err != "" {
			got = r.Err
		}
		if got != tt.want {
			t.Errorf("#%d: got %q, want %q", i, got, tt.want)
		}
		if rs := rows(e.Partitions()[0], "t"); !reflect.DeepEqual(rs, tt.rows) {
			t.Errorf("#%d: rows %v, want %v", i, rs, tt.rows)
		}
		checkHashes(t, e)
	}
}
