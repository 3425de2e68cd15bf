package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// DefaultHandshakeTimeout bounds a handshake whose context has no deadline.
const DefaultHandshakeTimeout = 10 * time.Second

// maxHelloBytes is the frame limit during the handshake: Hellos and errors are small.
const maxHelloBytes = 64 << 10

// ErrSpeaksHTTP is returned by ClientHandshake when the server answered in HTTP (its
// answer began with "HTTP/"): the address is an HTTP server, such as a node's admin
// address, not a node's client address. It wraps ErrProtocolVersion.
var ErrSpeaksHTTP = fmt.Errorf("the address speaks HTTP, not the Lockstep protocol: is it a node's admin (HTTP) address? Use the node's client address: %w",
	ErrProtocolVersion)

// ClientHandshake sends the client's Hello on nc and reads the server's answer. It
// returns the server's Hello, or an error: an *Error from the server (matching
// ErrProtocolVersion or ErrClusterMismatch), an error wrapping ErrProtocolVersion or
// ErrClusterMismatch if the server's Hello does not fit, ErrSpeaksHTTP if the server
// answered in HTTP, or an I/O error. An empty
// clusterID accepts any cluster. The handshake ends when ctx is done, or after
// DefaultHandshakeTimeout if ctx has no deadline. On success nc has no deadline and no
// bytes beyond the handshake were read, so nc can be passed to NewConn; on error the
// caller must close nc.
func ClientHandshake(ctx context.Context, nc net.Conn, clusterID string) (HelloReply, error) {
	var reply HelloReply
	err := withDeadline(ctx, nc, func() error {
		// The Hello carries a line end ("\r\n", under a key servers skip): an HTTP server
		// reached by mistake then holds a complete, malformed request line and answers
		// with an error at once, which is recognized below, instead of waiting for the rest
		// of a request until this handshake times out.
		hello := Hello{Version: ProtocolVersion, ClusterID: clusterID}
		if err := writeFrameNow(nc, appendHello(nil, &hello, true)); err != nil {
			return err
		}
		fr := NewFrameReader(nc, maxHelloBytes)
		body, err := fr.ReadFrame()
		if err != nil {
			if errors.Is(err, ErrFrameTooLarge) && string(fr.hdr[:]) == "HTTP" && nextByteIs(nc, '/') {
				// An HTTP server's error response ("HTTP/1.1 400 Bad Request"), its
				// first four bytes read as a frame length.
				return fmt.Errorf("wire: handshake: %w", ErrSpeaksHTTP)
			}
			return fmt.Errorf("wire: handshake: read server hello: %w", err)
		}
		// The server answers with a Hello or with an error Response. Their keys are
		// disjoint, so a Hello decodes as a Response with code OK.
		var resp Response
		if err := DecodeResponse(body, &resp); err != nil {
			return fmt.Errorf("wire: handshake: %w", err)
		}
		if err := resp.Err(); err != nil {
			return fmt.Errorf("wire: handshake rejected by server: %w", err)
		}
		if err := DecodeHello(body, &reply); err != nil {
			return fmt.Errorf("wire: handshake: %w", err)
		}
		if reply.Version != ProtocolVersion {
			return fmt.Errorf("wire: handshake: server speaks protocol version %d, want %d: %w",
				reply.Version, ProtocolVersion, ErrProtocolVersion)
		}
		if clusterID != "" && reply.ClusterID != "" && reply.ClusterID != clusterID {
			return fmt.Errorf("wire: handshake: server is in cluster %q, want %q: %w",
				reply.ClusterID, clusterID, ErrClusterMismatch)
		}
		return nil
	})
	if err != nil {
		return HelloReply{}, err
	}
	return reply, nil
}

// ServerHandshake reads the client's Hello from nc and answers it: with the server's
// Hello (clusterID, nodeID) if the client speaks ProtocolVersion and its cluster id is
// empty, equal to clusterID or clusterID is empty; else with an error Response (ID 0,
// code CodeProtocolVersion, CodeClusterMismatch or CodeMalformed), returning that
// *Error. It returns the client's Hello. Deadlines are as for ClientHandshake. On success
// nc can be passed to NewConn; on error the caller must close nc.
func ServerHandshake(ctx context.Context, nc net.Conn, clusterID, nodeID string) (Hello, error) {
	var hello Hello
	err := withDeadline(ctx, nc, func() error {
		body, err := NewFrameReader(nc, maxHelloBytes).ReadFrame()
		if err != nil {
			return fmt.Errorf("wire: handshake: read client hello: %w", err)
		}
		var reject *Error
		switch err := DecodeHello(body, &hello); {
		case err != nil:
			reject = &Error{Code: CodeMalformed, Message: err.Error()}
		case hello.Version != ProtocolVersion:
			reject = &Error{Code: CodeProtocolVersion, Message: fmt.Sprintf(
				"server speaks protocol version %d, client sent %d", ProtocolVersion, hello.Version)}
		case clusterID != "" && hello.ClusterID != "" && hello.ClusterID != clusterID:
			reject = &Error{Code: CodeClusterMismatch, Message: fmt.Sprintf(
				"server is in cluster %q, client wants %q", clusterID, hello.ClusterID)}
		}
		if reject != nil {
			resp := ErrorResponse(0, reject)
			if err := writeFrameNow(nc, AppendResponse(nil, &resp)); err != nil {
				return fmt.Errorf("%w (sending the rejection: %w)", reject, err)
			}
			return reject
		}
		reply := Hello{Version: ProtocolVersion, ClusterID: clusterID, NodeID: nodeID}
		return writeFrameNow(nc, AppendHello(nil, &reply))
	})
	if err != nil {
		return Hello{}, err
	}
	return hello, nil
}

// nextByteIs reports whether the next byte read from r is b.
func nextByteIs(r io.Reader, b byte) bool {
	var next [1]byte
	_, err := io.ReadFull(r, next[:])
	return err == nil && next[0] == b
}

// writeFrameNow writes one frame with a single unbuffered write.
func writeFrameNow(nc net.Conn, body []byte) error {
	if err := checkFrameLen(len(body), maxHelloBytes); err != nil {
		return fmt.Errorf("wire: handshake: %w", err)
	}
	if _, err := nc.Write(AppendFrame(make([]byte, 0, FrameHeaderBytes+len(body)), body)); err != nil {
		return fmt.Errorf("wire: handshake: write: %w", err)
	}
	return nil
}

// withDeadline runs fn with nc's deadline set from ctx (or DefaultHandshakeTimeout), and
// with nc's I/O interrupted if ctx is cancelled. It clears the deadline if fn succeeds.
func withDeadline(ctx context.Context, nc net.Conn, fn func() error) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultHandshakeTimeout)
	}
	if err := nc.SetDeadline(deadline); err != nil {
		return fmt.Errorf("wire: handshake: set deadline: %w", err)
	}
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = nc.SetDeadline(aLongTimeAgo)
		close(interrupted)
	})
	err := fn()
	if !stop() {
		<-interrupted
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%w: %w", cerr, err)
		}
		return err
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return fmt.Errorf("wire: handshake: clear deadline: %w", err)
	}
	return nil
}
