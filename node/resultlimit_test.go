package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// bigArgs asks a test.big procedure for a result of Size bytes.
type bigArgs struct {
	Size int `msgpack:"size"`
}

// bigTable is the table the test.big procedures write before returning their result.
const bigTable = "test.big"

// bigRegistry is the built-ins plus procedures that write a row on every partition they
// reach and then return as many bytes as asked: test.big (single-partition),
// test.big.multi (multi-partition), and test.big.read and test.big.read.multi (read-only,
// writing nothing).
func bigRegistry() *procedures.Registry {
	r := procedures.Builtins()
	write := func(tx *partition.Tx, a bigArgs) ([]byte, error) {
		for _, p := range tx.Scope() {
			v, err := tx.On(p)
			if err != nil {
				return nil, err
			}
			// Keyed by the scope's size, so that single- and multi-partition rows differ.
			if err := v.Put(bigTable, fmt.Appendf(nil, "scope-%d", len(tx.Scope())), []byte("yes")); err != nil {
				return nil, err
			}
		}
		return make([]byte, a.Size), nil
	}
	procedures.MustRegister(r, "test.big", write)
	procedures.MustRegister(r, "test.big.multi", write, procedures.MultiPartition())
	read := func(tx *partition.Tx, a bigArgs) ([]byte, error) { return make([]byte, a.Size), nil }
	procedures.MustRegister(r, "test.big.read", read, procedures.ReadOnly())
	procedures.MustRegister(r, "test.big.read.multi", read, procedures.ReadOnly(), procedures.MultiPartition())
	return r
}

// bigRows counts the rows of bigTable over every partition of every running node.
func (c *testCluster) bigRows() int {
	rows := 0
	for _, n := range c.Nodes {
		for _, p := range n.fsm.Engine().Partitions() {
			rows += p.Rows(bigTable)
		}
	}
	return rows
}

// TestResultOverLimitIsTooLarge is issue 7's scenario: a procedure that writes and then
// returns 5 MiB, more than a response frame holds. The client gets a typed TooLarge error
// at once (no timeouts, no retries), the write is undone on every replica (DESIGN.md
// invariants 2 and 7), the replicas stay equal (invariant 1), and a retry of the same
// request gets the same answer from the session cache (invariant 3). A result of exactly
// the limit goes through.
func TestResultOverLimitIsTooLarge(t *testing.T) {
	// Patient Raft: a leader change under load would only add NotLeader retries, which are
	// not what this test is about.
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true,
		registry: func(int) *procedures.Registry { return bigRegistry() }})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var addrs []string
	for _, cfg := range c.cfgs {
		addrs = append(addrs, cfg.ClientAddr)
	}
	dial := func(cfg client.Config) *client.Client {
		cfg.Addrs, cfg.ClusterID, cfg.TLS = addrs, "lockstep", testTLS
		cl, err := client.Dial(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	// The client of the issue: default retries; it saw three 1 s timeouts, then
	// ErrRetriesExhausted. Its timeout here is 5 s: building a 5 MiB result under -race
	// on a loaded 2-core machine can take more than 1 s, which would be a timeout of the
	// test's making.
	issue := dial(client.Config{RequestTimeout: 5 * time.Second})
	// A client that makes one attempt and waits long: it gets TooLarge only if the node
	// answered that very attempt, definitely, before any timeout. This proves promptness
	// without a wall-clock bound, which a loaded machine could break.
	once := dial(client.Config{RequestTimeout: 10 * time.Second, MaxRetries: -1})
	key := []byte("k")
	over := bigArgs{Size: 5 << 20}
	calls := []struct {
		name string
		call func(cl *client.Client, args bigArgs, res *[]byte) error
	}{
		{"single", func(cl *client.Client, a bigArgs, res *[]byte) error {
			return cl.Invoke(ctx, "test.big", key, a, res)
		}},
		{"multi", func(cl *client.Client, a bigArgs, res *[]byte) error {
			return cl.InvokeMulti(ctx, "test.big.multi", nil, a, res)
		}},
		{"read linearizable", func(cl *client.Client, a bigArgs, res *[]byte) error {
			return cl.Query(ctx, "test.big.read", key, a, res, client.ReadLinearizable)
		}},
		{"read any", func(cl *client.Client, a bigArgs, res *[]byte) error {
			return cl.Query(ctx, "test.big.read", key, a, res, client.ReadAny)
		}},
		{"read any multi", func(cl *client.Client, a bigArgs, res *[]byte) error {
			return cl.QueryMulti(ctx, "test.big.read.multi", nil, a, res, client.ReadAny)
		}},
	}
	for i, tc := range calls {
		for _, cl := range []struct {
			name string
			*client.Client
		}{{"issue's client", issue}, {"one-attempt client", once}} {
			var res []byte
			start := time.Now()
			err := tc.call(cl.Client, over, &res)
			took := time.Since(start)
			if !errors.Is(err, client.ErrTooLarge) || errors.Is(err, client.ErrRetriesExhausted) {
				t.Fatalf("#%d %s, %s: got %v, want %v", i, tc.name, cl.name, err, client.ErrTooLarge)
			}
			t.Logf("%s, %s: %v in %v", tc.name, cl.name, err, took)
		}
	}
	c.waitConverged()
	if n := c.bigRows(); n != 0 {
		t.Fatalf("the inputs whose results were too large left %d rows", n)
	}

	// A retry of the same request (same session, same number) gets the same answer.
	nc := rawConn(t, c.waitLeader().ClientAddr())
	roundTrip := func(req *wire.Request) wire.Response {
		t.Helper()
		if _, err := nc.Write(wire.AppendFrame(nil, wire.AppendRequest(nil, req))); err != nil {
			t.Fatal(err)
		}
		resp, err := readResponse(t, nc)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	open := roundTrip(&wire.Request{ID: 1, Op: wire.OpOpenSession})
	if open.Code != wire.CodeOK || open.Session == 0 {
		t.Fatalf("open session: %+v", open)
	}
	args, err := msgpack.Marshal(over)
	if err != nil {
		t.Fatal(err)
	}
	var first wire.Response
	for attempt := range 2 {
		resp := roundTrip(&wire.Request{ID: uint64(2 + attempt), Op: wire.OpInvoke, Session: open.Session, Seq: 1,
			Procedure: "test.big", Key: key, HasKey: true, Args: args})
		if resp.Code != wire.CodeTooLarge || resp.Value != nil {
			t.Fatalf("attempt %d: got %v (%d bytes), want %v", attempt, resp.Code, len(resp.Value), wire.CodeTooLarge)
		}
		if attempt == 0 {
			first = resp
		} else if resp.Message != first.Message {
			t.Fatalf("retry: got %q, want the first answer %q", resp.Message, first.Message)
		}
	}
	c.waitConverged()
	if n := c.bigRows(); n != 0 {
		t.Fatalf("after the retry: %d rows", n)
	}

	// Exactly at the limit: a bin32 header of 5 bytes and the data.
	at := bigArgs{Size: partition.DefaultMaxResultBytes - 5}
	for i, tc := range calls {
		var res []byte
		if err := tc.call(issue, at, &res); err != nil || len(res) != at.Size {
			t.Fatalf("#%d %s at the limit: got %d bytes, %v; want %d bytes", i, tc.name, len(res), err, at.Size)
		}
	}
	c.waitConverged()
	if n, want := c.bigRows(), 3*(1+4); n != want { // on each node: the key's partition, and all 4
		t.Fatalf("at the limit: got %d rows, want %d", n, want)
	}
}

// TestStreamReadFitsAFrame: a stream read over records that together exceed a frame
// returns the records that fit, with the NextOffset after the last one, so a consumer
// reads them all, page by page (issue 7: an oversized read response was dropped).
func TestStreamReadFitsAFrame(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	const records, size = 6, 900 << 10 // 5.3 MiB in all, over the 4 MiB frame
	key := []byte("orders")
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "events"}); err != nil {
		t.Fatal(err)
	}
	for i := range records {
		if _, err := cl.Append(ctx, "events", key, bytes.Repeat([]byte{byte('a' + i)}, size)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	p := partition.PartitionOf(key, 4)
	var got []client.Record
	for off, reads := uint64(0), 0; off < records; reads++ {
		if reads == records {
			t.Fatalf("no progress reading from offset %d", off)
		}
		recs, next, err := cl.ReadStream(ctx, "events", p, off, 0)
		if err != nil {
			t.Fatalf("read from %d: %v", off, err)
		}
		if len(recs) == 0 || next != off+uint64(len(recs)) {
			t.Fatalf("read from %d: %d records, next %d", off, len(recs), next)
		}
		t.Logf("read from %d: %d records", off, len(recs))
		got = append(got, recs...)
		off = next
	}
	for i, r := range got {
		if r.Offset != uint64(i) || len(r.Data) != size || r.Data[0] != byte('a'+i) {
			t.Fatalf("#%d: got record at %d of %d bytes starting %q", i, r.Offset, len(r.Data), r.Data[:1])
		}
	}
}

// fullRecords are the largest full records one stream read can return: records up to
// maxStreamReadBytes, then one more of the largest key and value (the read stops after
// the record that crosses the bound).
func fullRecords() []wire.StreamRecord {
	var recs []wire.StreamRecord
	size := 0
	for size <= maxStreamReadBytes && len(recs) < maxStreamRead {
		r := wire.StreamRecord{Offset: 1<<64 - 1, Key: make([]byte, partition.MaxKeyBytes), Value: make([]byte, partition.MaxValueBytes), EventTime: -1 << 63}
		size += wire.StreamRecordSize(&r)
		recs = append(recs, r)
	}
	return recs
}

// TestResponsesFitAFrame checks the arithmetic that keeps every response within one
// frame: a result of the largest allowed MaxResultBytes with a session id, a full stream
// read, and an error of the longest message.
func TestResponsesFitAFrame(t *testing.T) {
	recs := make([][]byte, 0, maxStreamRead)
	left := maxStreamReadBytes
	for len(recs) < maxStreamRead && left >= recordOverheadBytes {
		n := min(left-recordOverheadBytes, partition.MaxValueBytes)
		recs = append(recs, make([]byte, n))
		left -= n + recordOverheadBytes
	}
	long := string(bytes.Repeat([]byte("é"), maxMessageBytes))
	for i, resp := range []wire.Response{
		{ID: 1<<64 - 1, Session: 1<<64 - 1, Value: make([]byte, partition.MaxResultBytesLimit)},
		{ID: 1<<64 - 1, Records: recs, NextOffset: 1<<64 - 1},
		{ID: 1<<64 - 1, Records: [][]byte{make([]byte, partition.MaxValueBytes)}, NextOffset: 1<<64 - 1},
		{ID: 1<<64 - 1, Entries: fullRecords(), NextOffset: 1<<64 - 1},
		{ID: 1<<64 - 1, Code: wire.CodeProcedureError, Message: truncateMessage(long, maxMessageBytes)},
	} {
		if n := len(wire.AppendResponse(nil, &resp)); n > wire.DefaultMaxFrameBytes {
			t.Fatalf("#%d: response of %d bytes, frame limit %d", i, n, wire.DefaultMaxFrameBytes)
		}
	}
	if got := truncateMessage(long, maxMessageBytes); len(got) > maxMessageBytes || !utf8.ValidString(got) {
		t.Fatalf("truncated message of %d bytes, want at most %d", len(got), maxMessageBytes)
	}
	if got := truncateMessage("short", maxMessageBytes); got != "short" {
		t.Fatalf("short message changed to %q", got)
	}
}
