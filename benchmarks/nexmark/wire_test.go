package nexmark

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestWireMatchesLibrary: the hand-written forms are the msgpack library's (so records
// read alike with either), and the reader takes every integer form the library writes.
func TestWireMatchesLibrary(t *testing.T) {
	ints := []int64{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, math.MaxInt64,
		-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64}
	for i, v := range ints {
		var lib bytes.Buffer
		enc := msgpack.NewEncoder(&lib)
		_ = enc.EncodeInt(v)
		if got := appendInt(nil, v); !bytes.Equal(got, lib.Bytes()) {
			t.Errorf("#%d: appendInt(%d) = %x, library %x", i, v, got, lib.Bytes())
		}
		lib.Reset()
		_ = enc.EncodeInt64(v) // the library's fixed 9-byte form
		r := reader{b: lib.Bytes()}
		if got := r.int(); got != v || r.err != nil {
			t.Errorf("#%d: int of %x = %d, %v", i, lib.Bytes(), got, r.err)
		}
	}
	for i, n := range []int{0, 31, 32, 255, 256, 65535, 65536} {
		s := string(bytes.Repeat([]byte{'x'}, n))
		var lib bytes.Buffer
		_ = msgpack.NewEncoder(&lib).EncodeString(s)
		if got := appendStr(nil, s); !bytes.Equal(got, lib.Bytes()) {
			t.Errorf("#%d: appendStr of %d bytes differs from the library's", i, n)
		}
		r := reader{b: lib.Bytes()}
		if got := r.str(); got != s || r.err != nil {
			t.Errorf("#%d: str of %d bytes: %v", i, n, r.err)
		}
	}
	var lib bytes.Buffer
	_ = msgpack.NewEncoder(&lib).EncodeFloat64(908.5)
	if got := appendFloat(nil, 908.5); !bytes.Equal(got, lib.Bytes()) {
		t.Errorf("appendFloat = %x, library %x", got, lib.Bytes())
	}
	// Rows decode with the library by their msgpack tags.
	row := Q1Row{Auction: 1, Bidder: 2, Price: 0.908 * 300, DateTime: DefaultBaseTime, Extra: "x"}
	var back Q1Row
	if err := msgpack.Unmarshal(row.Encode(), &back); err != nil || !reflect.DeepEqual(back, row) {
		t.Fatalf("Q1Row round trip: %+v, %v", back, err)
	}
}
