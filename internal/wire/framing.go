package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// DefaultMaxFrameBytes is the default limit on a frame's body, in bytes.
const DefaultMaxFrameBytes = 4 << 20

// FrameHeaderBytes is the size of a frame's length prefix.
const FrameHeaderBytes = 4

// readChunkBytes is the size of the chunks a frame body is read in: a chunk is allocated
// only when the bytes before it have arrived, so a peer that claims a large frame and
// sends part of it pins what it sent, rounded up to a chunk, and nothing more.
const readChunkBytes = 64 << 10

// frameError is the type of the framing sentinels; each wraps the catalogue sentinel
// whose code reports it to the peer.
type frameError struct {
	text string
	code error
}

func (e *frameError) Error() string { return e.text }
func (e *frameError) Unwrap() error { return e.code }

// Framing errors. Each wraps the catalogue sentinel that ErrorResponse maps it to.
var (
	// ErrFrameTooLarge is returned for a frame whose length exceeds the limit. It wraps
	// ErrTooLarge. The body was not read, so the stream is no longer aligned on frames.
	ErrFrameTooLarge error = &frameError{"wire: frame too large", ErrTooLarge}
	// ErrEmptyFrame is returned for a frame of length 0. It wraps ErrMalformed. The
	// stream is still aligned on frames.
	ErrEmptyFrame error = &frameError{"wire: empty frame", ErrMalformed}
)

// FrameReader reads frames from a byte stream. It is not safe for concurrent use: one
// goroutine owns it.
type FrameReader struct {
	r      io.Reader
	max    int
	hdr    [FrameHeaderBytes]byte
	budget *ReadBudget // nil: unbounded
}

// SetBudget makes the reader take the bytes of a frame body beyond its first chunk from b
// while the frame is being received (see ReadBudget); nil removes the bound.
func (fr *FrameReader) SetBudget(b *ReadBudget) { fr.budget = b }

// NewFrameReader returns a FrameReader that reads frames of at most maxFrameBytes
// (DefaultMaxFrameBytes if maxFrameBytes <= 0) from r. It reads exactly the bytes of each
// frame and nothing more; wrap r in a bufio.Reader for fewer system calls.
func NewFrameReader(r io.Reader, maxFrameBytes int) *FrameReader {
	if maxFrameBytes <= 0 {
		maxFrameBytes = DefaultMaxFrameBytes
	}
	return &FrameReader{r: r, max: maxFrameBytes}
}

// ReadFrame reads the next frame and returns its body, a new slice owned by the caller.
// It returns io.EOF if the stream ends cleanly between frames, an error wrapping
// io.ErrUnexpectedEOF if it ends inside a frame, ErrEmptyFrame for a zero length, and an
// error wrapping ErrFrameTooLarge, without allocating the claimed size, for a length
// over the limit.
func (fr *FrameReader) ReadFrame() ([]byte, error) {
	n, err := io.ReadFull(fr.r, fr.hdr[:])
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("wire: truncated frame header (%d of %d bytes): %w", n, FrameHeaderBytes, err)
	case err == io.EOF:
		return nil, io.EOF
	case err != nil:
		return nil, fmt.Errorf("wire: read frame header: %w", err)
	}
	size := binary.BigEndian.Uint32(fr.hdr[:])
	if size == 0 {
		return nil, ErrEmptyFrame
	}
	if uint64(size) > uint64(fr.max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, size, fr.max)
	}
	return readBody(fr.r, int(size), fr.budget)
}

// readBody reads an n-byte frame body. A body of up to one chunk is read into its
// buffer at once. A larger one is read chunk by chunk as its bytes arrive, each chunk
// after the first taken from budget before it is allocated, and assembled into one
// buffer once complete; everything taken is given back when readBody returns. So a body
// that never completes never costs more than it sent (rounded up to a chunk), and never
// a buffer of its claimed size.
func readBody(r io.Reader, n int, budget *ReadBudget) ([]byte, error) {
	if n <= readChunkBytes {
		buf := make([]byte, n)
		if got, err := io.ReadFull(r, buf); err != nil {
			return nil, truncatedBody(got, n, err)
		}
		return buf, nil
	}
	chunks := make([][]byte, 0, (n+readChunkBytes-1)/readChunkBytes)
	got, taken := 0, 0
	defer func() { budget.give(taken) }()
	for got < n {
		size := min(n-got, readChunkBytes)
		if len(chunks) > 0 {
			if !budget.take(size) {
				return nil, fmt.Errorf("%w: a frame of %d bytes after %d received (budget %d bytes)", ErrReadBudget, n, got, budget.Limit())
			}
			taken += size
		}
		c := make([]byte, size)
		m, err := io.ReadFull(r, c)
		got += m
		if err != nil {
			return nil, truncatedBody(got, n, err)
		}
		chunks = append(chunks, c)
	}
	body := make([]byte, 0, n)
	for _, c := range chunks {
		body = append(body, c...)
	}
	return body, nil
}

// truncatedBody is the error of a body that ended after got of its n bytes.
func truncatedBody(got, n int, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("wire: truncated frame body (%d of %d bytes): %w", got, n, err)
}

// checkFrameLen reports whether a body of n bytes may be sent under limit.
func checkFrameLen(n, limit int) error {
	if n == 0 {
		return ErrEmptyFrame
	}
	if n > limit || uint64(n) > math.MaxUint32 {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, limit)
	}
	return nil
}

// AppendFrame appends a frame (length prefix and body) to dst and returns the extended
// buffer. It does not check the body's size.
func AppendFrame(dst, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...)
}

// FrameWriter writes frames into a buffer and sends them when flushed, so several frames
// share one write. It is not safe for concurrent use: one goroutine owns it (Conn gives
// many goroutines a way to send).
type FrameWriter struct {
	w   *bufio.Writer
	max int
	hdr [FrameHeaderBytes]byte
}

// NewFrameWriter returns a FrameWriter that buffers up to bufferBytes (4096 if <= 0)
// before writing to w, and refuses bodies over maxFrameBytes (DefaultMaxFrameBytes if
// <= 0).
func NewFrameWriter(w io.Writer, bufferBytes, maxFrameBytes int) *FrameWriter {
	if maxFrameBytes <= 0 {
		maxFrameBytes = DefaultMaxFrameBytes
	}
	if bufferBytes <= 0 {
		bufferBytes = 4096
	}
	return &FrameWriter{w: bufio.NewWriterSize(w, bufferBytes), max: maxFrameBytes}
}

// WriteFrame buffers one frame with the given body; a full buffer is written out. It
// returns ErrEmptyFrame for an empty body and an error wrapping ErrFrameTooLarge for a
// body over the limit, writing nothing. Call Flush to send what is buffered.
func (fw *FrameWriter) WriteFrame(body []byte) error {
	if err := checkFrameLen(len(body), fw.max); err != nil {
		return err
	}
	binary.BigEndian.PutUint32(fw.hdr[:], uint32(len(body)))
	if _, err := fw.w.Write(fw.hdr[:]); err != nil {
		return fmt.Errorf("wire: write frame: %w", err)
	}
	if _, err := fw.w.Write(body); err != nil {
		return fmt.Errorf("wire: write frame: %w", err)
	}
	return nil
}

// Buffered returns the number of bytes buffered and not yet written.
func (fw *FrameWriter) Buffered() int { return fw.w.Buffered() }

// Flush writes every buffered frame to the underlying writer.
func (fw *FrameWriter) Flush() error {
	if err := fw.w.Flush(); err != nil {
		return fmt.Errorf("wire: flush frames: %w", err)
	}
	return nil
}
