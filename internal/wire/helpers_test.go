package wire

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// sendUntilBlocked calls send, each time with a 20 ms deadline, at most tries times, until
// two calls in a row time out: the writer may take one more frame after a send first times
// out, so two mean it is stuck in a write with the queue full. It reports whether that
// happened; any error but a timeout fails the test.
func sendUntilBlocked(t *testing.T, tries int, send func(ctx context.Context) error) bool {
	t.Helper()
	timeouts := 0
	for i := 0; i < tries; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		err := send(ctx)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			if timeouts++; timeouts == 2 {
				return true
			}
		case err == nil:
			timeouts = 0
		default:
			t.Fatalf("#%d: got %v, want nil or context.DeadlineExceeded", i, err)
		}
	}
	return false
}

// tcpPair returns the two ends of a TCP connection over 127.0.0.1. Both are closed when
// the test ends.
func tcpPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	acceptErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			acceptErr <- err
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case server = <-accepted:
	case err := <-acceptErr:
		client.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

// sampleRequests are requests that exercise every field and every integer width.
func sampleRequests() []Request {
	return []Request{
		{ID: 1, Op: OpPing},
		{ID: 2, Op: OpOpenSession},
		{ID: 3, Op: OpCloseSession, Session: 1 << 40},
		{ID: 4, Op: OpStatus},
		{ID: 13, Op: OpProcedures},
		{ID: 14, Op: OpProcessors},
		{ID: 15, Op: OpSubscribe, Sub: 1<<64 - 1, Stream: "s", Partition: 3, Offset: 1 << 33, Max: 100,
			Bytes: 1 << 20, MinIndex: 1 << 50, Earliest: true},
		{Op: OpCredit, Sub: 2, Max: 1<<32 - 1, Bytes: 1<<64 - 1},
		{ID: 16, Op: OpUnsubscribe, Sub: 2},
		{ID: 17, Op: OpConfirmLeader, Term: 1<<64 - 1, LeaderID: "n2"},
		{ID: 18, Op: OpReadIndex},
		{ID: 19, Op: OpInvoke, Procedure: "kv.get", Key: []byte("k"), HasKey: true, Consistency: ConsistencyBounded, MaxLag: 1 << 40},
		{
			ID: 1<<64 - 1, Op: OpInvoke, Session: 7, Seq: 300, AckThrough: 299,
			Procedure: "kv.put", Key: []byte("user:42"), HasKey: true,
			Args: []byte{0x82, 0xa1, 'k', 0x01, 0xa1, 'v', 0xc0}, Consistency: 2,
		},
		{ID: 6, Op: OpInvoke, Procedure: "bank.transfer", HasKey: true}, // empty key
		{
			ID: 7, Op: OpInvoke, Procedure: "bank.transfer",
			Keys: [][]byte{[]byte("a"), nil, make([]byte, 300)}, Args: make([]byte, 70000),
		},
		{ID: 8, Op: OpStreamRead, Stream: "events", Partition: 3, Offset: 1 << 33, Max: 1 << 20},
		{ID: 9, Op: OpStreamRead, Stream: "events", Partition: -1, Max: 255},
		{ID: 10, Op: OpStreamRead, Partition: -1 << 31},
		{ID: 11, Op: OpStreamRead, Partition: 1<<31 - 1, Offset: 65536, Max: 65535},
		{ID: 13, Op: OpStreamRead, Stream: "clicks", Partition: 2, Offset: 7, Full: true},
		{ID: 12, Op: Op(200), Procedure: string(make([]byte, 40))}, // unknown op: still decodes
		{},
	}
}

// sampleResponses are responses that exercise every field.
func sampleResponses() []Response {
	return []Response{
		{ID: 1},
		{ID: 2, Session: 99},
		{ID: 3, Value: []byte{0x93, 1, 2, 3}},
		{ID: 4, Code: CodeNotLeader, Message: "not the leader", Leader: "10.0.0.2:7400"},
		{ID: 5, Records: [][]byte{[]byte("r1"), nil, []byte("r3")}, NextOffset: 1 << 35},
		{ID: 6, NextOffset: 1<<64 - 1, Entries: []StreamRecord{
			{Offset: 0, Key: []byte("k"), Value: []byte("v"), EventTime: 1_700_000_000_123},
			{Offset: 1<<64 - 2, Value: make([]byte, 300), EventTime: -1 << 63},
			{Offset: 5, Key: []byte("only key"), EventTime: 1<<63 - 1}}},
		{ID: 7, Code: CodeOffsetTrimmed, Message: "offset 3 trimmed", NextOffset: 10},
		{Sub: 1<<64 - 1, Index: 1 << 40, NextOffset: 3, Entries: []StreamRecord{{Offset: 2, Value: []byte("v")}}},
		{Sub: 9, Code: CodeOffsetPastEnd, Message: "past the end", NextOffset: 4},
		{ID: 1<<64 - 1, Code: Code(1<<16 - 1), Message: string(make([]byte, 70000))},
		{Code: CodeProtocolVersion, Message: "server speaks protocol version 1"},
		{},
	}
}

// sampleHellos are hellos of both directions.
func sampleHellos() []Hello {
	return []Hello{
		{Version: ProtocolVersion, ClusterID: "prod"},
		{Version: ProtocolVersion, ClusterID: "prod", NodeID: "node-1"},
		{Version: 1<<32 - 1},
		{},
	}
}
