package client

import (
	"bytes"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// maxPooledArgsBytes bounds the argument buffers the client keeps for reuse; a larger one
// is left to the garbage collector.
const maxPooledArgsBytes = 64 << 10

// argsBuffer is a reusable msgpack encoder and the buffer it writes to.
type argsBuffer struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

// encodeArgs sets req.Args, of procedure proc, to the msgpack encoding of args (none for
// nil args), the same bytes msgpack.Marshal returns. req.Args lives in the returned pooled buffer: the caller
// hands it back with putArgs once no attempt of req can be sent any more (sending copies
// the request into a frame).
func (c *Client) encodeArgs(proc string, req *wire.Request, args any) (*argsBuffer, error) {
	if args == nil {
		return nil, nil
	}
	ab, _ := c.encoders.Get().(*argsBuffer)
	if ab == nil {
		ab = &argsBuffer{enc: msgpack.NewEncoder(nil)}
	}
	ab.buf.Reset()
	ab.enc.Reset(&ab.buf) // default options, as msgpack.Marshal
	if err := ab.enc.Encode(args); err != nil {
		c.putArgs(ab)
		return nil, fmt.Errorf("client: %s: %w: encode arguments: %w", proc, ErrBadArguments, err)
	}
	req.Args = ab.buf.Bytes()
	return ab, nil
}

// putArgs returns a buffer of encodeArgs to the pool; nil is a no-op.
func (c *Client) putArgs(ab *argsBuffer) {
	if ab == nil || ab.buf.Cap() > maxPooledArgsBytes {
		return
	}
	c.encoders.Put(ab)
}

// resultDecoder is a reusable msgpack decoder and the reader it reads from.
type resultDecoder struct {
	rd  bytes.Reader
	dec *msgpack.Decoder
}

// decode decodes the msgpack value data into v, as msgpack.Unmarshal does. v keeps no
// reference to data.
func (c *Client) decode(data []byte, v any) error {
	d, _ := c.decoders.Get().(*resultDecoder)
	if d == nil {
		d = &resultDecoder{dec: msgpack.NewDecoder(nil)}
	}
	d.rd.Reset(data)
	// The calls of msgpack.Unmarshal, so that the options are the same.
	d.dec.UsePreallocateValues(true)
	d.dec.Reset(&d.rd)
	err := d.dec.Decode(v)
	d.rd.Reset(nil)
	d.dec.ResetReader(nil)
	c.decoders.Put(d)
	return err
}

// decodeResult decodes a procedure's result value into result, unless result is nil.
func (c *Client) decodeResult(proc string, value []byte, result any) error {
	if result == nil || len(value) == 0 {
		return nil
	}
	if err := c.decode(value, result); err != nil {
		return fmt.Errorf("client: %s: %w: decode result into %T: %w", proc, ErrMalformed, result, err)
	}
	return nil
}
