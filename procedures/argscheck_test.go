package procedures

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/vmihailenco/msgpack/v5"
)

// msgpackSamples are valid encodings covering every msgpack format family.
func msgpackSamples(t testing.TB) [][]byte {
	values := []any{
		nil, true, false, 0, 127, -1, -32, -33, 255, 256, 65536, math.MaxInt64, math.MinInt64, uint64(math.MaxUint64),
		float32(1.5), 2.5, "", "s", strings.Repeat("x", 31), strings.Repeat("x", 32), strings.Repeat("x", 256),
		strings.Repeat("x", 70000), []byte{}, []byte("b"), bytes.Repeat([]byte{1}, 300), bytes.Repeat([]byte{1}, 70000),
		[]int{}, []int{1, 2, 3}, make([]int, 16), make([]int, 70000), map[string]any{},
		map[string]any{"a": []any{1, map[string]any{"b": nil}}, "c": "d"}, make(map[int]int, 0),
		time.Unix(1, 0), time.Unix(1<<40, 5), // ext -1 (fixext4, fixext8, ext8)
		builtin.VoterInitArgs{Contestants: []string{"a", "b"}, MaxVotesPerPhone: 3}, builtin.KVCasArgs{Old: []byte("o")},
	}
	var out [][]byte
	for _, v := range values {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatalf("marshal %T: %v", v, err)
		}
		out = append(out, b)
	}
	big := make(map[int]int, 20)
	for i := range 20 {
		big[i] = i
	}
	b, _ := msgpack.Marshal(big) // map16
	return append(out, b,
		[]byte{0xc7, 2, 5, 1, 2},       // ext8
		[]byte{0xc8, 0, 1, 5, 1},       // ext16
		[]byte{0xc9, 0, 0, 0, 1, 5, 1}, // ext32
		[]byte{0xd4, 5, 1},             // fixext1
		[]byte{0xd8, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, // fixext16
		[]byte{0xdd, 0, 0, 0, 1, 0xc0},                                         // array32
		[]byte{0xdf, 0, 0, 0, 1, 1, 2},                                         // map32
	)
}

func TestCheckMsgpack(t *testing.T) {
	for i, b := range msgpackSamples(t) {
		if err := schema.CheckMsgpack(b); err != nil {
			t.Errorf("#%d %x: got %v, want nil", i, b[:min(len(b), 16)], err)
		}
		// Every strict prefix is truncated, and a trailing byte is one too many.
		for n := range len(b) {
			if schema.CheckMsgpack(b[:n]) == nil {
				t.Errorf("#%d: prefix of %d of %d bytes accepted", i, n, len(b))
				break
			}
		}
		if schema.CheckMsgpack(append(bytes.Clone(b), 0)) == nil {
			t.Errorf("#%d: trailing byte accepted", i)
		}
	}
	for i, b := range [][]byte{
		{0xc1},
		{0xc6, 0xff, 0xff, 0xff, 0xff},       // bin32 claiming 4 GiB
		{0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 1, 2}, // str32 claiming 3.7 GB
		{0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2}, // array32 claiming 4G elements
		{0xdf, 0x10, 0, 0, 0, 1, 2},          // map32 claiming 256M pairs
		{0x93, 1, 2},                         // fixarray of 3 with 2
		{0xc9, 0, 0, 0, 2, 5, 1},             // ext32 short by one
		{0xcd, 1},                            // uint16 short
	} {
		if err := schema.CheckMsgpack(b); err == nil {
			t.Errorf("#%d %x: accepted", i, b)
		}
	}
}

// TestHugeLengthHeaders checks DESIGN.md invariant 7 against length headers that claim
// far more than the input holds: a typed error, no large allocation, nothing changed.
func TestHugeLengthHeaders(t *testing.T) {
	te := newTestEngine(t, 2)
	tests := []struct {
		proc string
		args []byte
	}{
		{"kv.put", []byte("\x81\xa1v\xc6\xff\xff\xff\xff")},                           // Value: bin32 of 4 GiB
		{"kv.cas", []byte("\x83\xa1o\xdb\xdb\xdb\xdb\xdb\xdb\xdb\xc4\x00\x00\xa2oa")}, // Old: str32 (fuzz find)
		{"stream.append", []byte("\x82\xa1s\xa1s\xa1r\xc6\x7f\xff\xff\xff")},
		{"voter.init", []byte("\x81\xa1c\xdd\xff\xff\xff\xff")}, // Contestants: 4G strings
		// A record's key: bin32 of 4 GiB, which the fast codec declines (stream_decode.go).
		{"stream.append_batch", []byte("\x82\xa1s\xa1s\xa1r\x91\x81\xa1k\xc6\xff\xff\xff\xff")},
	}
	for i, tt := range tests {
		before := te.snapshot(t)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		allocated := ms.TotalAlloc
		_, err := te.exec(te.input(tt.proc, "k", tt.args, nil))
		runtime.ReadMemStats(&ms)
		if !errors.Is(err, ErrBadArguments) {
			t.Errorf("#%d %s: got %v, want %v", i, tt.proc, err, ErrBadArguments)
		}
		if got := ms.TotalAlloc - allocated; got > 1<<20 {
			t.Errorf("#%d %s: allocated %d bytes for %d bytes of arguments", i, tt.proc, got, len(tt.args))
		}
		if !te.snapshot(t).same(before) {
			t.Errorf("#%d %s: state changed", i, tt.proc)
		}
	}
}

// FuzzCheckMsgpack checks that schema.CheckMsgpack accepts exactly the inputs that hold one
// well-formed msgpack value, as the msgpack decoder's Skip reads them.
func FuzzCheckMsgpack(f *testing.F) {
	for _, b := range msgpackSamples(f) {
		if len(b) < 1000 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := schema.CheckMsgpack(b)
		r := bytes.NewReader(b)
		skipErr := msgpack.NewDecoder(r).Skip()
		valid := skipErr == nil && r.Len() == 0
		if (err == nil) != valid {
			t.Fatalf("%x: CheckMsgpack %v, decoder Skip %v with %d bytes left", b, err, skipErr, r.Len())
		}
	})
}
