package node

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// rawConn is a handshaken connection for sending hand-made frames.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	nc = testDialTLS(t, nc)
	t.Cleanup(func() { nc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := wire.ClientHandshake(ctx, nc, "lockstep"); err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

func readResponse(t *testing.T, nc net.Conn) (wire.Response, error) {
	t.Helper()
	body, err := wire.NewFrameReader(nc, wire.DefaultMaxFrameBytes).ReadFrame()
	if err != nil {
		return wire.Response{}, err
	}
	var resp wire.Response
	if err := wire.DecodeResponse(body, &resp); err != nil {
		t.Fatalf("undecodable response: %v", err)
	}
	return resp, nil
}

// TestBadInputHurtsOnlyItsSender: garbage, truncated, oversized and malformed frames, a
// wrong protocol version, unknown procedures and undecodable arguments get a typed error
// or a clean close of that one connection; the node keeps serving everyone else, and the
// log stays replayable (DESIGN.md invariant 7).
func TestBadInputHurtsOnlyItsSender(t *testing.T) {
	bothSnapshotModes(t, func(t *testing.T, snapshots bool) {
		c := startCluster(t, clusterOptions{nodes: 3, snapshots: snapshots})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		good := c.dial(ctx)
		l := c.waitLeader()
		addr := l.ClientAddr()
		stillServes := func(what string) {
			t.Helper()
			if _, err := good.CounterAdd(ctx, "alive", 1); err != nil {
				t.Fatalf("after %s: node stopped serving: %v", what, err)
			}
		}

		t.Run("garbage before handshake", func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			nc = testDialTLS(t, nc)
			defer nc.Close()
			nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			// The server closes with our bytes unread, so TCP may report a reset.
			if _, err := io.ReadAll(nc); err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("want the connection closed, got %v", err)
			}
			stillServes("garbage")
		})
		t.Run("wrong protocol version", func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			nc = testDialTLS(t, nc)
			defer nc.Close()
			nc.Write(wire.AppendFrame(nil, wire.AppendHello(nil, &wire.Hello{Version: 99})))
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := readResponse(t, nc)
			if err != nil || resp.Code != wire.CodeProtocolVersion {
				t.Fatalf("got %v %v, want CodeProtocolVersion", resp.Code, err)
			}
			stillServes("wrong version")
		})
		t.Run("truncated frame", func(t *testing.T) {
			nc := rawConn(t, addr)
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], 100)
			nc.Write(hdr[:])
			nc.Write([]byte("short"))
			nc.(interface{ CloseWrite() error }).CloseWrite()
			if _, err := io.ReadAll(nc); err != nil {
				t.Fatalf("want a clean close, got %v", err)
			}
			stillServes("truncated frame")
		})
		t.Run("oversized frame", func(t *testing.T) {
			nc := rawConn(t, addr)
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], 1<<30)
			nc.Write(hdr[:])
			resp, err := readResponse(t, nc)
			if err != nil || !errors.Is(resp.Err(), wire.ErrTooLarge) {
				t.Fatalf("got %v %v, want ErrTooLarge", resp.Err(), err)
			}
			stillServes("oversized frame")
		})
		t.Run("malformed request", func(t *testing.T) {
			nc := rawConn(t, addr)
			// A map with id 7 and then a field of the wrong type.
			body := []byte{0x82, 0xa2, 'i', 'd', 0x07, 0xa2, 'o', 'p', 0xa3, 'b', 'a', 'd'}
			nc.Write(wire.AppendFrame(nil, body))
			resp, err := readResponse(t, nc)
			if err != nil || resp.ID != 7 || resp.Code != wire.CodeMalformed {
				t.Fatalf("got id %d %v %v, want id 7 CodeMalformed", resp.ID, resp.Code, err)
			}
			// The connection goes on.
			nc.Write(wire.AppendFrame(nil, wire.AppendRequest(nil, &wire.Request{ID: 8, Op: wire.OpPing})))
			if resp, err = readResponse(t, nc); err != nil || resp.ID != 8 || resp.Code != wire.CodeOK {
				t.Fatalf("ping after malformed: got %+v %v", resp, err)
			}
		})
		t.Run("procedure errors", func(t *testing.T) {
			cases := []struct {
				proc string
				key  []byte
				args any
				want error
			}{
				{"no.such.procedure", []byte("k"), nil, client.ErrUnknownProcedure},
				{"counter.add", []byte("k"), "not a struct", client.ErrBadArguments},
				{"counter.add", []byte("k"), map[string]any{"delta": "seven"}, client.ErrBadArguments},
				{"counter.add", []byte("k"), map[string]any{"nope": 1}, client.ErrBadArguments},
				{"counter.add", make([]byte, 5000), map[string]any{"delta": 1}, client.ErrBadArguments},
				{"kv.put", []byte("k"), map[string]any{"value": make([]byte, 2<<20)}, client.ErrTooLarge},
			}
			for i, tc := range cases {
				err := good.Invoke(ctx, tc.proc, tc.key, tc.args, nil)
				if !errors.Is(err, tc.want) {
					t.Errorf("#%d: %s: got %v, want %v", i, tc.proc, err, tc.want)
				}
			}
			// Raw argument bytes that are not msgpack at all.
			resp := rawCall(t, addr, &wire.Request{Op: wire.OpInvoke, Procedure: "kv.put", Key: []byte("k"), HasKey: true, Args: []byte{0xc1, 0xff}})
			if !errors.Is(resp.Err(), wire.ErrBadArguments) {
				t.Fatalf("undecodable args: got %v", resp.Err())
			}
			stillServes("procedure errors")
		})
		// Whatever of the above entered the log replays cleanly on a restarted node.
		before := c.waitConverged()
		victim := 0
		for i, n := range c.Nodes {
			if n != c.leader() {
				victim = i
				break
			}
		}
		c.kill(victim)
		c.restart(victim)
		if after := c.waitConverged(); len(after) != len(before) {
			t.Fatalf("hashes changed shape after replay")
		}
	})
}

// TestClientThatDoesNotReadLosesOnlyItsConnection: a client that pipelines requests and
// never reads the responses fills its own send queue; the node closes that connection
// instead of blocking the goroutine that answers every client (DESIGN.md invariant 7).
func TestClientThatDoesNotReadLosesOnlyItsConnection(t *testing.T) {
	// Patient Raft: under load a leader change would send the reader's requests NotLeader
	// answers, and the checks below would look at a node that never served it.
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	good := c.dial(ctx)
	if _, err := good.KVPut(ctx, []byte("big"), make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	// Each kv.get answer carries 64 KiB: 32 MiB of answers overflow the socket buffers
	// and then the node's queue for this connection.
	l := c.waitLeader()
	nc := rawConn(t, l.ClientAddr())
	var frames []byte
	for id := uint64(1); id <= 512; id++ {
		frames = wire.AppendFrame(frames, wire.AppendRequest(nil, &wire.Request{ID: id, Op: wire.OpInvoke,
			Procedure: "kv.get", Key: []byte("big"), HasKey: true}))
	}
	go nc.Write(frames) // may block once the node stops reading; the test closes nc at the end
	// Meanwhile every other client is served.
	for i := 0; i < 50; i++ {
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := good.CounterAdd(actx, "alive", 1)
		acancel()
		if err != nil {
			t.Fatalf("#%d: node stopped serving others: %v", i, err)
		}
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		for conn := range l.conns { // the good client's and the peers' stay open
			if conn.RemoteAddr().String() == nc.LocalAddr().String() {
				return fmt.Errorf("the connection that does not read is still open")
			}
		}
		return nil
	})
	// The responses it did not read were counted, not dropped in silence (issue 7).
	if n := sendErrors(t, l.Metrics(), sendQueueFull); n < 1 {
		t.Fatalf("lockstep_client_send_errors_total{reason=queue_full} = %v, want at least 1", n)
	}
}

// TestRawRequestsRefused: requests the client library never sends, made by hand, each get
// their typed error from the node's own checks (subscribe, credit, invoke, users, op)
// and change nothing: the partitions' state hashes stay what they were (DESIGN.md
// invariant 7).
func TestRawRequestsRefused(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 1, partitions: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.dial(ctx).Streams().Create(ctx, builtin.StreamDefinition{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	n := c.Nodes[0]
	nc := rawConn(t, n.ClientAddr())
	roundTrip := func(req *wire.Request) wire.Response {
		t.Helper()
		nc.Write(wire.AppendFrame(nil, wire.AppendRequest(nil, req)))
		resp, err := readResponse(t, nc)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	users := func(a wire.UserArgs) []byte {
		b, err := msgpack.Marshal(&a)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if resp := roundTrip(&wire.Request{ID: 1, Op: wire.OpSubscribe, Sub: 9, Stream: "s", Max: 1, Bytes: 1 << 20}); resp.Code != wire.CodeOK {
		t.Fatalf("subscribe: %v %s", resp.Code, resp.Message)
	}
	hashes := func() (hs []uint64) {
		for _, p := range n.fsm.Engine().Partitions() {
			hs = append(hs, p.RecomputeHash())
		}
		return hs
	}
	before := hashes()
	for i, tc := range []struct {
		name string
		req  wire.Request
		want wire.Code
	}{
		{"subscription id 0", wire.Request{Op: wire.OpSubscribe, Stream: "s"}, wire.CodeBadArguments},
		{"subscription without a stream", wire.Request{Op: wire.OpSubscribe, Sub: 1}, wire.CodeBadArguments},
		{"subscription credit over the bound", wire.Request{Op: wire.OpSubscribe, Sub: 1, Stream: "s", Max: math.MaxUint32}, wire.CodeBadArguments},
		{"subscription id taken", wire.Request{Op: wire.OpSubscribe, Sub: 9, Stream: "s"}, wire.CodeBadArguments},
		{"unknown consistency", wire.Request{Op: wire.OpInvoke, Procedure: "counter.get", Key: []byte("k"), HasKey: true, Consistency: 9}, wire.CodeBadArguments},
		{"no partition key", wire.Request{Op: wire.OpInvoke, Procedure: "counter.add"}, wire.CodeBadArguments},
		{"empty partition key", wire.Request{Op: wire.OpInvoke, Procedure: "counter.add", HasKey: true}, wire.CodeBadArguments},
		{"write at consistency Any", wire.Request{Op: wire.OpInvoke, Procedure: "counter.add", Key: []byte("k"), HasKey: true, Consistency: wire.ConsistencyAny}, wire.CodeBadArguments},
		{"unknown user command", wire.Request{Op: wire.OpUsers, Args: users(wire.UserArgs{Cmd: "bogus", Name: "x"})}, wire.CodeBadArguments},
		{"grant of nothing", wire.Request{Op: wire.OpUsers, Args: users(wire.UserArgs{Cmd: wire.UserGrant, Name: "x"})}, wire.CodeBadArguments},
		{"unknown op", wire.Request{Op: wire.Op(200)}, wire.CodeMalformed},
	} {
		tc.req.ID = uint64(100 + i)
		if resp := roundTrip(&tc.req); resp.ID != tc.req.ID || resp.Code != tc.want {
			t.Errorf("#%d %s: got %d %v %q, want %v", i, tc.name, resp.ID, resp.Code, resp.Message, tc.want)
		}
	}
	// A credit grant past the bound ends the subscription with an end push.
	nc.Write(wire.AppendFrame(nil, wire.AppendRequest(nil, &wire.Request{ID: 200, Op: wire.OpCredit, Sub: 9, Max: math.MaxUint32})))
	if resp, err := readResponse(t, nc); err != nil || resp.Sub != 9 || resp.Code != wire.CodeBadArguments {
		t.Errorf("credit over the bound: got %+v %v, want the end push of subscription 9 with BadArguments", resp, err)
	}
	if after := hashes(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("state hashes %x after the refused requests, %x before", after, before)
	}
}
