/*
Package wire is Lockstep's client protocol: the frames, messages, handshake and error
codes spoken between a client (the Go client library, or any other) and a node. The node
server and the client both build on it; it knows nothing of Raft, partitions or
procedures, whose arguments and results it carries as opaque msgpack bytes.

# Frames

A connection carries a stream of frames in each direction. A frame is a 4-byte
big-endian unsigned length followed by that many bytes of body; the body is one msgpack
map (a Hello, a Request or a Response):

	+--------+--------+--------+--------+------------------------------+
	|          length (uint32, BE)      |  body: msgpack map, length B |
	+--------+--------+--------+--------+------------------------------+

A length of 0 is invalid (ErrEmptyFrame). A length over the receiver's limit
(DefaultMaxFrameBytes, 4 MiB) is rejected without reading or allocating the body
(ErrFrameTooLarge); the stream is then out of step and the connection must be closed.

# Handshake

The first frame each way is a Hello:

 1. the client sends Hello{Version: ProtocolVersion, ClusterID: the cluster it expects},
    and a line end ("\r\n") under a key servers skip, so that an HTTP server reached by
    mistake answers at once (ClientHandshake recognizes "HTTP/": ErrSpeaksHTTP);
 2. the server checks the version, then the cluster id (when both are non-empty);
 3. on success it answers Hello{Version, ClusterID, NodeID}; on failure it answers an
    error Response with ID 0 and code CodeProtocolVersion, CodeClusterMismatch or
    CodeMalformed, and closes the connection.

ClientHandshake and ServerHandshake do this under a deadline and leave the connection
ready for NewConn.

# Message flow

After the handshake the client sends Requests and the server sends Responses. The client
gives each Request an ID, unique among its requests in flight on the connection, and
need not wait for a Response before sending the next Request (pipelining). The server
answers each Request with exactly one Response carrying the same ID, in any order:
a fast read may overtake a slow write. An error the server cannot tie to a request (a
frame too large or that decodes to no ID) is answered with ID 0.

Usage, client side:

	nc, err := net.Dial("tcp", addr)
	reply, err := wire.ClientHandshake(ctx, nc, clusterID) // reply.NodeID names the node
	c, err := wire.NewConn(nc, wire.ConnConfig{})
	defer c.Close()
	go func() { // one reader goroutine delivers Responses to waiters by ID
		var resp wire.Response
		for c.RecvResponse(&resp) == nil {
			deliver(resp.ID, resp.Err(), resp.Value)
		}
	}()
	err = c.SendRequest(ctx, &wire.Request{ID: 1, Op: wire.OpPing}) // from any goroutine

Server side, per accepted connection:

	hello, err := wire.ServerHandshake(ctx, nc, clusterID, nodeID)
	if err != nil { nc.Close(); return }
	c, err := wire.NewConn(nc, wire.ConnConfig{})
	for {
		var req wire.Request
		if err := c.RecvRequest(&req); err != nil { ...; break }
		go func() { // or hand to a bounded worker pool
			resp := handle(req) // or wire.ErrorResponse(req.ID, err)
			c.SendResponse(ctx, &resp)
		}()
	}

# Subscriptions

Two exceptions to one Response per Request serve push subscriptions (OpSubscribe):

  - a push is a Response the client did not ask for one by one: ID 0, Sub set to the
    subscription's id, records in Entries (or, with a Code other than CodeOK, the end of
    the subscription); the client's reader tells it from a connection-level error by Sub;
  - OpCredit, which grants a subscription more credit (records in Max, bytes in Bytes), is
    one-way: ID 0 and no Response.

The node sends a subscription's records only within the credit granted, and a push with
Conn.SendPush, which leaves half of the send queue to Responses. Response.Index and
Request.MinIndex let a subscription move to another replica without a gap (see the
field docs and docs/protocol.md).

# Error catalogue

Every Response carries a Code. CodeOK is success; every other code has a stable name
(Code.String) and a sentinel error (ErrNotLeader, ErrOverloaded, ...). Response.Err
turns a non-OK Response into an *Error that matches its sentinel under errors.Is;
ErrorResponse turns a server-side error, which wraps a sentinel with %w, into a Response.
Never match errors by their message.

The catalogue is append-only: a code's number and name never change and a retired code
is never reused. A new code takes the next number. A peer that receives a code it does
not know treats it as an error (its name prints as "Code(n)").

# Contract

  - Encoders write only fields that are not zero; decoders skip keys they do not know, so
    a newer peer may add fields. Changing a field's key, type or meaning needs a new
    ProtocolVersion.
  - Everything decoded from the network is untrusted: decoders never panic, reject
    malformed input with errors wrapping ErrMalformed, and bound every allocation by the
    frame size and MaxListLen.
  - A Conn's send methods are safe for concurrent use; its receive methods belong to one
    goroutine. Decoded []byte fields share the frame's memory, which belongs to the
    caller.
*/
package wire
