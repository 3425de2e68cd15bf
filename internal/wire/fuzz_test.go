package wire

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// fuzzMaxFrameBytes keeps fuzzed frames small so that large claims hit the limit.
const fuzzMaxFrameBytes = 1 << 12

// FuzzReadFrame feeds arbitrary bytes to a FrameReader: it must not panic, must fail only
// with the documented errors, and every frame it returns must re-frame identically.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{})
	f.Add(AppendFrame(nil, []byte{0x80}))
	f.Add(AppendFrame(AppendFrame(nil, []byte{1, 2, 3}), []byte{4}))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{0, 0, 0, 9, 1, 2})
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := NewFrameReader(bytes.NewReader(data), fuzzMaxFrameBytes)
		var bodies [][]byte
		var err error
		for {
			var body []byte
			if body, err = fr.ReadFrame(); err != nil {
				break
			}
			if len(body) == 0 || len(body) > fuzzMaxFrameBytes {
				t.Fatalf("got a body of %d bytes, want 1 to %d", len(body), fuzzMaxFrameBytes)
			}
			bodies = append(bodies, body)
		}
		switch {
		case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrEmptyFrame),
			errors.Is(err, ErrFrameTooLarge):
		default:
			t.Fatalf("got error %v, want EOF, truncation, empty or too large", err)
		}
		var again []byte
		for _, b := range bodies {
			again = AppendFrame(again, b)
		}
		if !bytes.HasPrefix(data, again) {
			t.Fatalf("re-framed bodies are not a prefix of the input")
		}
	})
}

// seedMessages adds the encodings of the small sample messages and some garbage to f.
// Large seeds slow the fuzzer down without finding more; the unit tests cover them.
func seedMessages(f *testing.F) {
	add := func(b []byte) {
		if len(b) <= 1024 {
			f.Add(b)
		}
	}
	for _, r := range sampleRequests() {
		add(AppendRequest(nil, &r))
	}
	for _, r := range sampleResponses() {
		add(AppendResponse(nil, &r))
	}
	for _, h := range sampleHellos() {
		add(AppendHello(nil, &h))
	}
	f.Add([]byte{})
	f.Add([]byte{0xc1})
	f.Add([]byte{0x81, 0xa1, 'z', 0x92, 0x81, 0xa1, 'x', 0x91, 0xc0, 0xd4, 1, 2})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
}

// FuzzDecodeRequest checks that DecodeRequest never panics, fails only with ErrMalformed,
// and that what it decodes re-encodes and decodes to the same value.
func FuzzDecodeRequest(f *testing.F) {
	seedMessages(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Request
		if err := DecodeRequest(data, &r); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got error %v, want one wrapping ErrMalformed", err)
			}
			return
		}
		var again Request
		if err := DecodeRequest(AppendRequest(nil, &r), &again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip: got %+v, want %+v", again, r)
		}
	})
}

// FuzzDecodeResponse is FuzzDecodeRequest for Response.
func FuzzDecodeResponse(f *testing.F) {
	seedMessages(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Response
		if err := DecodeResponse(data, &r); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got error %v, want one wrapping ErrMalformed", err)
			}
			return
		}
		var again Response
		if err := DecodeResponse(AppendResponse(nil, &r), &again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip: got %+v, want %+v", again, r)
		}
	})
}

// FuzzDecodeHello is FuzzDecodeRequest for Hello, which servers decode before any check.
func FuzzDecodeHello(f *testing.F) {
	seedMessages(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var h Hello
		if err := DecodeHello(data, &h); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got error %v, want one wrapping ErrMalformed", err)
			}
			return
		}
		var again Hello
		if err := DecodeHello(AppendHello(nil, &h), &again); err != nil || again != h {
			t.Fatalf("round trip: got %+v, %v, want %+v", again, err, h)
		}
	})
}
