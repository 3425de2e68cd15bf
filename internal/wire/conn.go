package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ConnConfig configures a Conn. Zero fields take their defaults.
type ConnConfig struct {
	// MaxFrameBytes is the largest frame body the Conn reads or sends, in bytes.
	// Default DefaultMaxFrameBytes.
	MaxFrameBytes int
	// SendQueueFrames is how many frames may wait for the writer goroutine before a send
	// blocks. Default 1024.
	SendQueueFrames int
	// SendQueueBytes bounds the encoded frames waiting for the writer goroutine, in bytes:
	// a send blocks while this much is pending (a lone frame of any size up to
	// MaxFrameBytes still goes). Default 8 MiB.
	SendQueueBytes int
	// ReadBufferBytes is the size of the read buffer, in bytes. Default 64 KiB.
	ReadBufferBytes int
	// WriteBufferBytes is the largest write buffer the writer keeps from one write to the
	// next, in bytes; a burst of frames that grows it beyond is written, then the buffer
	// is dropped. Default 256 KiB.
	WriteBufferBytes int
	// ReadBudget, if set, bounds the bytes of frame bodies being received, shared with
	// other Conns (see ReadBudget). Default nil: no bound but MaxFrameBytes.
	ReadBudget *ReadBudget
}

// DefaultConnConfig returns the default ConnConfig.
func DefaultConnConfig() ConnConfig {
	return ConnConfig{
		MaxFrameBytes:    DefaultMaxFrameBytes,
		SendQueueFrames:  1024,
		SendQueueBytes:   8 << 20,
		ReadBufferBytes:  64 << 10,
		WriteBufferBytes: 256 << 10,
	}
}

// withDefaults returns c with every zero field set to its default.
func (c ConnConfig) withDefaults() ConnConfig {
	def := DefaultConnConfig()
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = def.MaxFrameBytes
	}
	if c.SendQueueFrames == 0 {
		c.SendQueueFrames = def.SendQueueFrames
	}
	if c.SendQueueBytes == 0 {
		c.SendQueueBytes = def.SendQueueBytes
	}
	if c.ReadBufferBytes == 0 {
		c.ReadBufferBytes = def.ReadBufferBytes
	}
	if c.WriteBufferBytes == 0 {
		c.WriteBufferBytes = def.WriteBufferBytes
	}
	return c
}

// Validate reports an error if a field is negative or MaxFrameBytes does not fit the
// 32-bit length prefix. Zero fields are valid: they take their defaults.
func (c ConnConfig) Validate() error {
	switch {
	case c.MaxFrameBytes < 0 || uint64(c.MaxFrameBytes) > math.MaxUint32:
		return fmt.Errorf("wire: ConnConfig.MaxFrameBytes %d out of range [0, 2^32)", c.MaxFrameBytes)
	case c.SendQueueFrames < 0:
		return fmt.Errorf("wire: ConnConfig.SendQueueFrames %d is negative", c.SendQueueFrames)
	case c.SendQueueBytes < 0:
		return fmt.Errorf("wire: ConnConfig.SendQueueBytes %d is negative", c.SendQueueBytes)
	case c.ReadBufferBytes < 0:
		return fmt.Errorf("wire: ConnConfig.ReadBufferBytes %d is negative", c.ReadBufferBytes)
	case c.WriteBufferBytes < 0:
		return fmt.Errorf("wire: ConnConfig.WriteBufferBytes %d is negative", c.WriteBufferBytes)
	}
	return nil
}

// aLongTimeAgo is a deadline already passed, set to interrupt blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// Conn is a framed connection after the handshake. Any number of goroutines may send on
// it at once: each send encodes its frame straight into a shared pending buffer, and a
// writer goroutine that the Conn owns takes the whole buffer and writes it with one system
// call, so frames sent together share it and a send costs no channel operation while the
// writer is busy. Receiving is for one goroutine at a time. The owner must call Close or
// Shutdown to stop the writer goroutine.
type Conn struct {
	nc  net.Conn
	cfg ConnConfig
	fr  *FrameReader

	mu      sync.Mutex
	pending []byte        // encoded frames, headers included, waiting for the writer
	frames  int           // frames in pending; sends block at cfg.SendQueueFrames
	waiters int           // sends waiting for room
	room    chan struct{} // closed when the writer takes pending while sends wait
	sendErr error         // why sending stopped; set before quit is closed

	wake chan struct{} // cap 1: pending went from empty to non-empty
	quit chan struct{} // closed when sending stops: Close, Shutdown or a write error
	done chan struct{} // closed when the writer goroutine has returned

	drain    atomic.Bool // whether the writer sends what is pending before it returns
	quitOnce sync.Once
	writeErr error // the writer's final error; read after done is closed

	closeOnce sync.Once
	closeErr  error
}

// NewConn wraps nc, on which the handshake is done, and starts the Conn's writer
// goroutine. The Conn owns nc from now on; the caller may still set read deadlines on it.
func NewConn(nc net.Conn, cfg ConnConfig) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Conn{
		nc:   nc,
		cfg:  cfg,
		fr:   NewFrameReader(bufio.NewReaderSize(nc, cfg.ReadBufferBytes), cfg.MaxFrameBytes),
		room: make(chan struct{}),
		wake: make(chan struct{}, 1),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	c.fr.SetBudget(cfg.ReadBudget)
	go c.writeLoop()
	return c, nil
}

// RemoteAddr returns the peer's network address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Recv reads the next frame and returns its body, owned by the caller. Errors are those
// of FrameReader.ReadFrame. Recv is not safe for concurrent use.
func (c *Conn) Recv() ([]byte, error) { return c.fr.ReadFrame() }

// RecvRequest reads the next frame and decodes it into r; r shares the frame's memory.
// On a decoding error (wrapping ErrMalformed) the frame was consumed and r holds the
// fields decoded before the error; a nonzero r.ID names the request to answer.
func (c *Conn) RecvRequest(r *Request) error {
	body, err := c.fr.ReadFrame()
	if err != nil {
		return err
	}
	return DecodeRequest(body, r)
}

// RecvResponse reads the next frame and decodes it into r; r shares the frame's memory.
func (c *Conn) RecvResponse(r *Response) error {
	body, err := c.fr.ReadFrame()
	if err != nil {
		return err
	}
	return DecodeResponse(body, r)
}

// Send queues a copy of body as one frame. It blocks while the queue is full, until ctx
// is done. A nil error means the frame was queued, not that the peer received it. It
// fails with ErrEmptyFrame or ErrFrameTooLarge for a bad size, and with an error wrapping
// net.ErrClosed after Close or Shutdown.
func (c *Conn) Send(ctx context.Context, body []byte) error {
	if err := checkFrameLen(len(body), c.cfg.MaxFrameBytes); err != nil {
		return err
	}
	return c.enqueue(ctx, true, false, func(dst []byte) []byte { return append(dst, body...) })
}

// SendRequest encodes r and queues it as one frame, like Send.
func (c *Conn) SendRequest(ctx context.Context, r *Request) error {
	return c.enqueue(ctx, true, false, func(dst []byte) []byte { return AppendRequest(dst, r) })
}

// ErrQueueFull is the error of TrySendRequest when the send queue has no room: nothing
// was queued.
var ErrQueueFull = errors.New("wire: send queue full")

// TrySendRequest encodes r and queues it as one frame, like SendRequest, but never
// blocks: when the queue is full it returns ErrQueueFull and queues nothing. A caller
// that would otherwise have to arrange for a blocked send to be interrupted (a context
// callback, a timer) can try this first and arrange it only when the queue is full.
func (c *Conn) TrySendRequest(r *Request) error {
	return c.enqueue(context.Background(), false, false, func(dst []byte) []byte { return AppendRequest(dst, r) })
}

// SendResponse encodes r and queues it as one frame, like Send.
func (c *Conn) SendResponse(ctx context.Context, r *Response) error {
	return c.enqueue(ctx, true, false, func(dst []byte) []byte { return AppendResponse(dst, r) })
}

// SendPush encodes r and queues it as one frame, like Send, but waits while the queue is
// half full (in frames or bytes): pushes the peer did not ask for one by one (a
// subscription's records) never take the second half of the queue, which stays free
// for answers that must not wait.
func (c *Conn) SendPush(ctx context.Context, r *Response) error {
	return c.enqueue(ctx, true, true, func(dst []byte) []byte { return AppendResponse(dst, r) })
}

// enqueue waits for room (half the queue for a push), then encodes one frame at the end
// of pending and wakes the writer if pending was empty. Unless wait, it does not wait (ctx
// is unused): a full queue fails with ErrQueueFull.
func (c *Conn) enqueue(ctx context.Context, wait, push bool, encode func(dst []byte) []byte) error {
	c.mu.Lock()
	for c.sendErr == nil && c.full(push) {
		if !wait {
			c.mu.Unlock()
			return ErrQueueFull
		}
		room := c.room
		c.waiters++
		c.mu.Unlock()
		var err error
		select {
		case <-room:
		case <-c.quit:
		case <-ctx.Done():
			err = ctx.Err()
		}
		c.mu.Lock()
		c.waiters--
		if err != nil {
			c.mu.Unlock()
			return err
		}
	}
	if err := c.sendErr; err != nil {
		c.mu.Unlock()
		return err
	}
	start := len(c.pending)
	c.pending = encode(append(c.pending, 0, 0, 0, 0))
	n := len(c.pending) - start - FrameHeaderBytes
	if err := checkFrameLen(n, c.cfg.MaxFrameBytes); err != nil {
		c.pending = c.pending[:start]
		c.mu.Unlock()
		return err
	}
	binary.BigEndian.PutUint32(c.pending[start:], uint32(n))
	c.frames++
	first := c.frames == 1
	c.mu.Unlock()
	if first {
		select {
		case c.wake <- struct{}{}:
		default: // already signalled
		}
	}
	return nil
}

// full reports whether pending has no room for another frame, or for a push half the
// queue is taken; c.mu is held.
func (c *Conn) full(push bool) bool {
	frames, bytes := c.cfg.SendQueueFrames, c.cfg.SendQueueBytes
	if push {
		frames, bytes = max(frames/2, 1), bytes/2
	}
	return c.frames >= frames || (c.frames > 0 && len(c.pending) >= bytes)
}

// take hands the writer everything pending, leaving spare (emptied) in its place, and
// lets waiting sends in.
func (c *Conn) take(spare []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf := c.pending
	c.pending, c.frames = spare[:0], 0
	if c.waiters > 0 {
		close(c.room)
		c.room = make(chan struct{})
	}
	return buf
}

// stop stops sending, recording why if it is the first reason.
func (c *Conn) stop(why error) {
	c.quitOnce.Do(func() {
		c.mu.Lock()
		c.sendErr = why
		c.mu.Unlock()
		close(c.quit)
	})
}

// writeLoop is the writer goroutine: whenever frames are pending it takes them all and
// writes them with one system call. It returns when sending stops, after writing what is
// pending if asked to.
func (c *Conn) writeLoop() {
	defer close(c.done)
	var buf []byte
	for {
		select {
		case <-c.wake:
		case <-c.quit:
			if c.drain.Load() {
				_, c.writeErr = c.nc.Write(c.take(nil))
			}
			return
		}
		// Let goroutines that are about to send run first, so that under load one write
		// carries many frames; idle, this costs one yield.
		runtime.Gosched()
		buf = c.take(buf)
		if len(buf) == 0 {
			continue
		}
		if _, err := c.nc.Write(buf); err != nil {
			c.fail(err)
			return
		}
		if cap(buf) > c.cfg.WriteBufferBytes {
			buf = nil // do not keep a buffer that one burst of large frames grew
		}
	}
}

// fail stops the Conn after a write error: senders get the error and the receiver is
// woken by closing the connection.
func (c *Conn) fail(err error) {
	c.writeErr = err
	c.stop(fmt.Errorf("wire: connection failed: %w", err))
	_ = c.closeNet()
}

func (c *Conn) closeNet() error {
	c.closeOnce.Do(func() { c.closeErr = c.nc.Close() })
	return c.closeErr
}

var errConnClosed = fmt.Errorf("wire: connection closed: %w", net.ErrClosed)

// Close closes the connection at once, dropping queued frames, and waits for the writer
// goroutine. Blocked Sends and Recv return errors. Close is idempotent.
func (c *Conn) Close() error {
	c.stop(errConnClosed)
	err := c.closeNet()
	<-c.done
	return err
}

// Shutdown stops new sends, waits until every frame already queued is written and
// flushed or ctx is done, then closes the connection. Use it to deliver a last error
// Response before closing. Frames sent concurrently with Shutdown may be dropped.
func (c *Conn) Shutdown(ctx context.Context) error {
	c.drain.Store(true)
	c.stop(errConnClosed)
	if dl, ok := ctx.Deadline(); ok {
		_ = c.nc.SetWriteDeadline(dl)
	}
	stopTimer := context.AfterFunc(ctx, func() { _ = c.nc.SetWriteDeadline(aLongTimeAgo) })
	<-c.done
	stopTimer()
	werr := c.writeErr
	if werr != nil && ctx.Err() != nil {
		werr = fmt.Errorf("wire: shutdown: %w (%w)", ctx.Err(), werr)
	}
	return errors.Join(werr, c.closeNet())
}
