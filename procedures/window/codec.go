package window

import (
	"bytes"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// stateCodec is a msgpack encoder and decoder with their buffers, reused across window
// states: msgpack.Marshal and Unmarshal allocate a buffer and a reader per call, and a
// record updates several windows (a hopping window's every overlap). The encoder and
// decoder are reset before each use, as Marshal and Unmarshal reset theirs, so the bytes
// are theirs. One Aggregate runs on several partitions at once: hence a pool, not a field.
type stateCodec struct {
	enc   *msgpack.Encoder
	w     appendWriter
	canon []byte
	dec   *msgpack.Decoder
	r     bytes.Reader
}

var stateCodecs = sync.Pool{New: func() any {
	return &stateCodec{enc: msgpack.NewEncoder(nil), dec: msgpack.NewDecoder(nil)}
}}

// appendWriter is an io.Writer and io.ByteWriter that appends to a slice, so that the
// encoder writes to it directly (it wraps other writers in a buffer).
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

func (w *appendWriter) WriteByte(c byte) error { w.b = append(w.b, c); return nil }
