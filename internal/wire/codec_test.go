package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestRequestRoundTrip(t *testing.T) {
	for i, want := range sampleRequests() {
		b := AppendRequest(nil, &want)
		var got Request
		if err := DecodeRequest(b, &got); err != nil {
			t.Fatalf("#%d: decode: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("#%d: got %+v, want %+v", i, got, want)
		}
	}
}

func TestResponseRoundTrip(t *testing.T) {
	for i, want := range sampleResponses() {
		b := AppendResponse(nil, &want)
		var got Response
		if err := DecodeResponse(b, &got); err != nil {
			t.Fatalf("#%d: decode: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("#%d: got %+v, want %+v", i, got, want)
		}
	}
}

func TestHelloRoundTrip(t *testing.T) {
	for i, want := range sampleHellos() {
		b := AppendHello(nil, &want)
		var got Hello
		if err := DecodeHello(b, &got); err != nil {
			t.Fatalf("#%d: decode: %v", i, err)
		}
		if got != want {
			t.Errorf("#%d: got %+v, want %+v", i, got, want)
		}
	}
}

// TestLibraryInterop checks that the hand-written codec and a reflection-based msgpack
// library agree in both directions, so a client in any language can use the struct tags.
func TestLibraryInterop(t *testing.T) {
	check := func(name string, i int, v, fresh1, fresh2 any, decode func([]byte) (any, error), encode func() []byte) {
		t.Helper()
		lib, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatalf("%s #%d: library marshal: %v", name, i, err)
		}
		got, err := decode(lib)
		if err != nil {
			t.Fatalf("%s #%d: decode library bytes: %v", name, i, err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Errorf("%s #%d: from library: got %+v, want %+v", name, i, got, v)
		}
		if err := msgpack.Unmarshal(encode(), fresh1); err != nil {
			t.Fatalf("%s #%d: library unmarshal: %v", name, i, err)
		}
		if err := msgpack.Unmarshal(lib, fresh2); err != nil {
			t.Fatalf("%s #%d: library unmarshal: %v", name, i, err)
		}
		if !reflect.DeepEqual(fresh1, fresh2) {
			t.Errorf("%s #%d: to library: got %+v, want %+v", name, i, fresh1, fresh2)
		}
	}
	for i, r := range sampleRequests() {
		check("request", i, r, new(Request), new(Request),
			func(b []byte) (any, error) { var got Request; err := DecodeRequest(b, &got); return got, err },
			func() []byte { return AppendRequest(nil, &r) })
	}
	for i, r := range sampleResponses() {
		check("response", i, r, new(Response), new(Response),
			func(b []byte) (any, error) { var got Response; err := DecodeResponse(b, &got); return got, err },
			func() []byte { return AppendResponse(nil, &r) })
	}
	for i, h := range sampleHellos() {
		check("hello", i, h, new(Hello), new(Hello),
			func(b []byte) (any, error) { var got Hello; err := DecodeHello(b, &got); return got, err },
			func() []byte { return AppendHello(nil, &h) })
	}
}

// TestHelloAndResponseKeysDisjoint pins what ClientHandshake relies on: a Hello decodes as
// an OK Response and an error Response decodes as a Hello of version 0.
func TestHelloAndResponseKeysDisjoint(t *testing.T) {
	h := Hello{Version: ProtocolVersion, ClusterID: "c", NodeID: "n"}
	var resp Response
	if err := DecodeResponse(AppendHello(nil, &h), &resp); err != nil || !reflect.DeepEqual(resp, Response{}) {
		t.Errorf("hello as response: got %+v, %v, want zero Response", resp, err)
	}
	r := Response{ID: 1, Code: CodeProtocolVersion, Message: "m", Value: []byte{1}, Leader: "l",
		Session: 1, Records: [][]byte{{1}}, NextOffset: 1}
	var got Hello
	if err := DecodeHello(AppendResponse(nil, &r), &got); err != nil || got != (Hello{}) {
		t.Errorf("response as hello: got %+v, %v, want zero Hello", got, err)
	}
}

func TestDecodeAcceptsOtherEncodings(t *testing.T) {
	tests := []struct {
		in   []byte
		want Request
	}{
		{[]byte{0x80}, Request{}},
		// uint64-width id, keys in another order, nil values
		{[]byte{0x83, 0xa2, 'o', 'p', 0xcc, 6, 0xa2, 'i', 'd', 0xcf, 0, 0, 0, 0, 0, 0, 0, 5, 0xa3, 'k', 'e', 'y', 0xc0},
			Request{ID: 5, Op: OpPing}},
		// signed forms of non-negative integers; int8 partition
		{[]byte{0x82, 0xa2, 'i', 'd', 0xd3, 0, 0, 0, 0, 0, 0, 1, 0, 0xa4, 'p', 'a', 'r', 't', 0xd0, 0x80},
			Request{ID: 256, Partition: -128}},
		// str8 key; empty bin and empty list decode as nil
		{[]byte{0x83, 0xd9, 3, 'k', 'e', 'y', 0xc4, 0, 0xa4, 'k', 'e', 'y', 's', 0x90, 0xa4, 'a', 'r', 'g', 's', 0xc6, 0, 0, 0, 0},
			Request{}},
		// map16 header; unknown keys with every kind of value are skipped
		{[]byte{0xde, 0, 7,
			0xa1, 'a', 0x92, 0x81, 0xa1, 'x', 0x91, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0xd4, 1, 2,
			0xa1, 'b', 0xc7, 2, 9, 1, 2,
			0xa1, 'c', 0xca, 1, 2, 3, 4,
			0xa1, 'd', 0xdc, 0, 2, 0xe0, 0xc3,
			0xa1, 'e', 0xdf, 0, 0, 0, 1, 0xc0, 0xd8, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
			0xa2, 'i', 'd', 0x07,
			0xa1, 'f', 0xc8, 0, 1, 5, 0}, Request{ID: 7}},
	}
	for i, tt := range tests {
		var got Request
		if err := DecodeRequest(tt.in, &got); err != nil {
			t.Errorf("#%d: got error %v, want %+v", i, err, tt.want)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("#%d: got %+v, want %+v", i, got, tt.want)
		}
	}
}

// TestDecodeRejectsMalformed checks that bad bodies give typed errors (DESIGN.md
// invariant 7: bad input gets a clear, typed error).
func TestDecodeRejectsMalformed(t *testing.T) {
	// an array32 of MaxListLen+1 nils
	longList := append([]byte{0x81, 0xa4, 'k', 'e', 'y', 's', 0xdd, 0, 1, 0, 1}, bytes.Repeat([]byte{0xc0}, MaxListLen+1)...)
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"not a map", []byte{0x91, 0x01}},
		{"nil body", []byte{0xc0}},
		{"trailing garbage", []byte{0x80, 0x00}},
		{"two maps", []byte{0x80, 0x80}},
		{"truncated map", []byte{0x81, 0xa2, 'i', 'd'}},
		{"map longer than body", []byte{0x8f}},
		{"map32 absurd length", []byte{0xdf, 0xff, 0xff, 0xff, 0xff}},
		{"key not a string", []byte{0x81, 0x01, 0x01}},
		{"id as string", []byte{0x81, 0xa2, 'i', 'd', 0xa1, '1'}},
		{"negative id", []byte{0x81, 0xa2, 'i', 'd', 0xff}},
		{"negative id int64", []byte{0x81, 0xa2, 'i', 'd', 0xd3, 0xff, 0, 0, 0, 0, 0, 0, 0}},
		{"float id", []byte{0x81, 0xa2, 'i', 'd', 0xca, 0, 0, 0, 0}},
		{"op out of range", []byte{0x81, 0xa2, 'o', 'p', 0xcd, 1, 0}},
		{"max out of range", []byte{0x81, 0xa3, 'm', 'a', 'x', 0xcf, 0, 0, 0, 1, 0, 0, 0, 0}},
		{"partition over int32", []byte{0x81, 0xa4, 'p', 'a', 'r', 't', 0xce, 0x80, 0, 0, 0}},
		{"partition under int32", []byte{0x81, 0xa4, 'p', 'a', 'r', 't', 0xd3, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff}},
		{"key as string", []byte{0x81, 0xa3, 'k', 'e', 'y', 0xa1, 'k'}},
		{"procedure as binary", []byte{0x81, 0xa4, 'p', 'r', 'o', 'c', 0xc4, 1, 'p'}},
		{"haskey as int", []byte{0x81, 0xa2, 'h', 'k', 0x01}},
		{"keys as binary", []byte{0x81, 0xa4, 'k', 'e', 'y', 's', 0xc4, 1, 'k'}},
		{"keys element as int", []byte{0x81, 0xa4, 'k', 'e', 'y', 's', 0x91, 0x01}},
		{"keys too long", longList},
		{"bin longer than body", []byte{0x81, 0xa4, 'a', 'r', 'g', 's', 0xc6, 0xff, 0xff, 0xff, 0xff, 1}},
		{"duplicate key", []byte{0x82, 0xa2, 'i', 'd', 0x01, 0xa2, 'i', 'd', 0x01}},
		{"never-used byte", []byte{0x81, 0xa1, 'z', 0xc1}},
		{"unknown key, nested too long", []byte{0x81, 0xa1, 'z', 0x9f, 0x9f}},
		{"unknown key, truncated ext", []byte{0x81, 0xa1, 'z', 0xc9, 0, 0, 0, 9, 1}},
	}
	for i, tt := range tests {
		var r Request
		err := DecodeRequest(tt.in, &r)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("#%d %s: got %v, want error wrapping ErrMalformed", i, tt.name, err)
		}
		if CodeOf(err) != CodeMalformed {
			t.Errorf("#%d %s: got code %v, want %v", i, tt.name, CodeOf(err), CodeMalformed)
		}
	}
}

// TestDecodeRejectsEveryTruncation cuts a valid encoding at every byte.
func TestDecodeRejectsEveryTruncation(t *testing.T) {
	reqs := sampleRequests()
	full := AppendRequest(nil, &reqs[4])
	for n := range len(full) {
		var r Request
		if err := DecodeRequest(full[:n], &r); !errors.Is(err, ErrMalformed) {
			t.Errorf("#%d: got %v, want error wrapping ErrMalformed", n, err)
		}
	}
	resps := sampleResponses()
	full = AppendResponse(nil, &resps[4])
	for n := range len(full) {
		var r Response
		if err := DecodeResponse(full[:n], &r); !errors.Is(err, ErrMalformed) {
			t.Errorf("#%d: got %v, want error wrapping ErrMalformed", n, err)
		}
	}
}

func TestDecodedBytesDoNotClobberBody(t *testing.T) {
	in := Request{ID: 1, Key: []byte("k"), HasKey: true, Args: []byte("args")}
	b := AppendRequest(nil, &in)
	orig := bytes.Clone(b)
	var r Request
	if err := DecodeRequest(b, &r); err != nil {
		t.Fatal(err)
	}
	_ = append(r.Key, "XXXXXXXX"...)
	if !bytes.Equal(b, orig) {
		t.Errorf("appending to a decoded field changed the body: got %x, want %x", b, orig)
	}
}

func TestDecodeErrorKeepsID(t *testing.T) {
	b := []byte{0x82, 0xa2, 'i', 'd', 0x2a, 0xa2, 'o', 'p', 0xa1, 'x'}
	var r Request
	if err := DecodeRequest(b, &r); !errors.Is(err, ErrMalformed) || r.ID != 42 {
		t.Errorf("got ID %d, err %v, want ID 42 and ErrMalformed", r.ID, err)
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	reqs := sampleRequests()
	resps := sampleResponses()
	buf := make([]byte, 0, 1<<20)
	allocs := testing.AllocsPerRun(100, func() {
		for i := range reqs {
			buf = AppendRequest(buf[:0], &reqs[i])
		}
		for i := range resps {
			buf = AppendResponse(buf[:0], &resps[i])
		}
	})
	if allocs != 0 {
		t.Errorf("got %v allocations, want 0", allocs)
	}
}

func TestDecodeAllocations(t *testing.T) {
	// A keyed invocation allocates only its procedure name.
	in := Request{ID: 9, Op: OpInvoke, Session: 1, Seq: 2, Procedure: "kv.get", Key: []byte("k"), HasKey: true, Args: []byte{0x01}}
	b := AppendRequest(nil, &in)
	var r Request
	allocs := testing.AllocsPerRun(100, func() {
		if err := DecodeRequest(b, &r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("got %v allocations, want <= 1", allocs)
	}
}

func BenchmarkAppendRequest(b *testing.B) {
	r := Request{ID: 9, Op: OpInvoke, Session: 1, Seq: 2, Procedure: "kv.put", Key: []byte("user:42"), HasKey: true, Args: make([]byte, 100)}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRequest(buf[:0], &r)
	}
}

func BenchmarkDecodeRequest(b *testing.B) {
	in := Request{ID: 9, Op: OpInvoke, Session: 1, Seq: 2, Procedure: "kv.put", Key: []byte("user:42"), HasKey: true, Args: make([]byte, 100)}
	body := AppendRequest(nil, &in)
	var r Request
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeRequest(body, &r); err != nil {
			b.Fatal(err)
		}
	}
}
