package goqueries

import (
	"bytes"
	"testing"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"
)

// TestStampedCodec: appendStamped writes the bytes msgpack.Marshal writes for a stamped
// record, for every msg type the queries send, and decodeStamped reads them back; bytes
// it does not take (a cut or changed envelope) go to msgpack, which decodes them alike.
func TestStampedCodec(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tm, stamp := rapid.Int64().Draw(t, "t"), rapid.Int64().Draw(t, "stamp")
		checkStamped(t, tm, stamp, struct{}{})
		checkStamped(t, tm, stamp, q8Msg{Person: rapid.Bool().Draw(t, "person"), Name: rapid.String().Draw(t, "name")})
		checkStamped(t, tm, stamp, nexmark.Q7Row{Auction: rapid.Int64().Draw(t, "a"), Price: rapid.Int64().Draw(t, "p"),
			Bidder: rapid.Int64().Draw(t, "b"), DateTime: rapid.Int64().Draw(t, "d"), Extra: rapid.String().Draw(t, "x")})
	})
}

func checkStamped[T comparable](t *rapid.T, tm, stamp int64, msg T) {
	want, err := msgpack.Marshal(&stamped[T]{Time: tm, Stamp: stamp, Msg: msg})
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendStamped(nil, tm, stamp, msg)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("appendStamped(%d, %d, %+v) = %x, %v; msgpack writes %x", tm, stamp, msg, got, err, want)
	}
	var s stamped[T]
	if !decodeStamped(got, &s) || s.Time != tm || s.Stamp != stamp || s.Msg != msg {
		t.Fatalf("decodeStamped(%x) = %+v", got, s)
	}
	// A changed byte or a cut: decodeStamped refuses, or agrees with msgpack.
	b := append([]byte(nil), got...)
	if i := rapid.IntRange(0, len(b)-1).Draw(t, "flip"); rapid.Bool().Draw(t, "cut") {
		b = b[:i]
	} else {
		b[i] ^= byte(rapid.IntRange(1, 255).Draw(t, "xor"))
	}
	var fast, slow stamped[T]
	if decodeStamped(b, &fast) {
		if err := msgpack.Unmarshal(b, &slow); err != nil || fast != slow {
			t.Fatalf("decodeStamped(%x) = %+v; msgpack: %+v, %v", b, fast, slow, err)
		}
	}
}
