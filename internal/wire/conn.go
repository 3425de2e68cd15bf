package wire

import (
	"bufio"
	"context"
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
	// ReadBufferBytes is the size of the read buffer, in bytes. Default 64 KiB.
	ReadBufferBytes int
	// WriteBufferBytes is the size of the write buffer, in bytes. Queued frames are
	// written when it fills and flushed when the send queue runs empty. Default 64 KiB.
	WriteBufferBytes int
}

// DefaultConnConfig returns the default ConnConfig.
func DefaultConnConfig() ConnConfig {
	return ConnConfig{
		MaxFrameBytes:    DefaultMaxFrameBytes,
		SendQueueFrames:  1024,
		ReadBufferBytes:  64 << 10,
		WriteBufferBytes: 64 << 10,
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
	case c.ReadBufferBytes < 0:
		return fmt.Errorf("wire: ConnConfig.ReadBufferBytes %d is negative", c.ReadBufferBytes)
	case c.WriteBufferBytes < 0:
		return fmt.Errorf("wire: ConnConfig.WriteBufferBytes %d is negative", c.WriteBufferBytes)
	}
	return nil
}

// Send buffers: new ones start at newBufBytes; up to keepBufsMax of at most keepBufBytes
// each are kept for reuse by later sends.
const (
	newBufBytes  = 512
	keepBufBytes = 64 << 10
	keepBufsMax  = 256
)

// aLongTimeAgo is a deadline already passed, set to interrupt blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// Conn is a framed connection after the handshake. Any number of goroutines may send on
// it at once: frames go into a bounded queue drained by a writer goroutine that the Conn
// owns, which writes them into one buffer and flushes when the queue runs empty, so
// frames sent together share a system call. Receiving is for one goroutine at a time.
// The owner must call Close or Shutdown to stop the writer goroutine.
type Conn struct {
	nc  net.Conn
	cfg ConnConfig
	fr  *FrameReader

	queue chan []byte   // encoded bodies waiting for the writer
	free  chan []byte   // spare body buffers
	quit  chan struct{} // closed when sending stops: Close, Shutdown or a write error
	done  chan struct{} // closed when the writer goroutine has returned

	drain    atomic.Bool // whether the writer sends what is queued before it returns
	quitOnce sync.Once
	mu       sync.Mutex
	sendErr  error // why sending stopped; guarded by mu
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
		nc:    nc,
		cfg:   cfg,
		fr:    NewFrameReader(bufio.NewReaderSize(nc, cfg.ReadBufferBytes), cfg.MaxFrameBytes),
		queue: make(chan []byte, cfg.SendQueueFrames),
		free:  make(chan []byte, min(cfg.SendQueueFrames, keepBufsMax)),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
	}
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
	return c.enqueue(ctx, append(c.getBuf(), body...))
}

// SendRequest encodes r and queues it as one frame, like Send.
func (c *Conn) SendRequest(ctx context.Context, r *Request) error {
	return c.enqueue(ctx, AppendRequest(c.getBuf(), r))
}

// SendResponse encodes r and queues it as one frame, like Send.
func (c *Conn) SendResponse(ctx context.Context, r *Response) error {
	return c.enqueue(ctx, AppendResponse(c.getBuf(), r))
}

func (c *Conn) enqueue(ctx context.Context, buf []byte) error {
	if err := checkFrameLen(len(buf), c.cfg.MaxFrameBytes); err != nil {
		c.putBuf(buf)
		return err
	}
	select {
	case <-c.quit:
		c.putBuf(buf)
		return c.stoppedErr()
	default:
	}
	select {
	case c.queue <- buf:
		return nil
	case <-c.quit:
		c.putBuf(buf)
		return c.stoppedErr()
	case <-ctx.Done():
		c.putBuf(buf)
		return ctx.Err()
	}
}

func (c *Conn) getBuf() []byte {
	select {
	case b := <-c.free:
		return b[:0]
	default:
		return make([]byte, 0, newBufBytes)
	}
}

func (c *Conn) putBuf(b []byte) {
	if cap(b) > keepBufBytes {
		return
	}
	select {
	case c.free <- b:
	default:
	}
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

func (c *Conn) stoppedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendErr
}

// writeLoop is the writer goroutine: it writes queued frames and flushes whenever the
// queue is empty. It returns when sending stops, after draining the queue if asked to.
func (c *Conn) writeLoop() {
	defer close(c.done)
	fw := NewFrameWriter(c.nc, c.cfg.WriteBufferBytes, c.cfg.MaxFrameBytes)
	for {
		select {
		case body := <-c.queue:
			err := c.write(fw, body)
			if err == nil && len(c.queue) == 0 {
				// Let goroutines that are about to send run first, so that under load
				// one write system call carries many frames; idle, this costs one yield.
				runtime.Gosched()
				if len(c.queue) == 0 {
					err = fw.Flush()
				}
			}
			if err != nil {
				c.fail(err)
				return
			}
		case <-c.quit:
			if c.drain.Load() {
				c.writeErr = c.drainQueue(fw)
			}
			return
		}
	}
}

// drainQueue writes and flushes every frame still queued.
func (c *Conn) drainQueue(fw *FrameWriter) error {
	for {
		select {
		case body := <-c.queue:
			if err := c.write(fw, body); err != nil {
				return err
			}
		default:
			return fw.Flush()
		}
	}
}

func (c *Conn) write(fw *FrameWriter, body []byte) error {
	err := fw.WriteFrame(body)
	c.putBuf(body)
	return err
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
