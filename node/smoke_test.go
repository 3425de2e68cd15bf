package node

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// rawCall sends one request over a fresh connection and returns the response.
func rawCall(t *testing.T, addr string, req *wire.Request) wire.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	nc = testDialTLS(t, nc)
	if _, err := wire.ClientHandshake(ctx, nc, ""); err != nil {
		nc.Close()
		t.Fatal(err)
	}
	c, err := wire.NewConn(nc, wire.ConnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req.ID = 1
	if err := c.SendRequest(ctx, req); err != nil {
		t.Fatal(err)
	}
	var resp wire.Response
	if err := c.RecvResponse(&resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestRetryReturnsOriginalResult: a request retried on purpose with the same session and
// sequence number after it succeeded is not executed again and gets the original result
// (DESIGN.md invariant 3).
func TestRetryReturnsOriginalResult(t *testing.T) {
	bothSnapshotModes(t, func(t *testing.T, snapshots bool) {
		c := startCluster(t, clusterOptions{nodes: 3, snapshots: snapshots})
		// call sends req to the leader; a leader lost under load answers NotLeader, and the
		// same request (same session and sequence number) goes to the next one, as a client
		// sends it: the session's dedup is what this test is about, so that is safe here.
		call := func(req *wire.Request) wire.Response {
			t.Helper()
			for {
				resp := rawCall(t, c.waitLeader().ClientAddr(), req)
				if resp.Code != wire.CodeNotLeader {
					return resp
				}
			}
		}
		resp := call(&wire.Request{Op: wire.OpOpenSession})
		if err := resp.Err(); err != nil || resp.Session == 0 {
			t.Fatalf("open session: %v %d", err, resp.Session)
		}
		ses := resp.Session
		args, _ := msgpack.Marshal(&builtin.CounterAddArgs{Delta: 5})
		for seq := uint64(1); seq <= 3; seq++ {
			resp = call(&wire.Request{Op: wire.OpInvoke, Session: ses, Seq: seq, Procedure: "counter.add", Key: []byte("c"), HasKey: true, Args: args})
			if err := resp.Err(); err != nil {
				t.Fatal(err)
			}
		}
		// A retry of seq 2 returns the original result and does not add again.
		resp = call(&wire.Request{Op: wire.OpInvoke, Session: ses, Seq: 2, Procedure: "counter.add", Key: []byte("c"), HasKey: true, Args: args})
		var v int64
		if err := msgpack.Unmarshal(resp.Value, &v); err != nil || v != 10 {
			t.Fatalf("retry: got %d (%v), want the original 10", v, err)
		}
		c.waitConverged()
	})
}
