package client

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

func TestReadStreamFullRecordsAndTrimmed(t *testing.T) {
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		switch {
		case req.Op != wire.OpStreamRead:
		case !req.Full:
			fc.reply(wire.Response{ID: req.ID, Code: wire.CodeMalformed, Message: "want full records"})
		case req.Offset < 10:
			fc.reply(wire.Response{ID: req.ID, Code: wire.CodeOffsetTrimmed, Message: "offset trimmed", NextOffset: 10})
		case req.Stream == "missing":
			fc.reply(wire.Response{ID: req.ID, Code: wire.CodeUnknownStream})
		default: // a compacted stream: a gap at 11
			fc.reply(wire.Response{ID: req.ID, NextOffset: 13, Entries: []wire.StreamRecord{
				{Offset: 10, Key: []byte("a"), Value: []byte("v10"), EventTime: 1_700_000_000_123},
				{Offset: 12, Key: []byte("b"), Value: []byte("v12"), EventTime: 5}}})
		}
	})
	c := dial(t, testConfig(t, n.addr))
	ctx := context.Background()
	recs, next, err := c.ReadStream(ctx, "s", 1, 10, 0)
	if err != nil || next != 13 || len(recs) != 2 {
		t.Fatalf("ReadStream: got %+v, %d, %v", recs, next, err)
	}
	want := []Record{
		{Offset: 10, Key: []byte("a"), Data: []byte("v10"), EventTime: time.UnixMilli(1_700_000_000_123).UTC()},
		{Offset: 12, Key: []byte("b"), Data: []byte("v12"), EventTime: time.UnixMilli(5).UTC()},
	}
	for i := range want {
		g, w := recs[i], want[i]
		if g.Offset != w.Offset || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Data, w.Data) || !g.EventTime.Equal(w.EventTime) {
			t.Errorf("#%d: got %+v, want %+v", i, g, w)
		}
	}
	recs, next, err = c.ReadStream(ctx, "s", 1, 3, 0)
	var te *OffsetTrimmedError
	if !errors.Is(err, ErrOffsetTrimmed) || !errors.As(err, &te) || te.First != 10 || next != 10 || recs != nil {
		t.Errorf("trimmed read: got %v, next %d; want an OffsetTrimmedError naming 10", err, next)
	}
	if _, _, err := c.ReadStream(ctx, "missing", 0, 10, 0); !errors.Is(err, ErrUnknownStream) {
		t.Errorf("missing stream: got %v, want ErrUnknownStream", err)
	}
}

// TestReadStreamRefusesDisorder: an answer whose records go back, start before the offset
// asked for, or reach its own next offset is ErrMalformed, and no record is returned.
func TestReadStreamRefusesDisorder(t *testing.T) {
	answers := map[string]wire.Response{
		"backwards":     {NextOffset: 13, Entries: []wire.StreamRecord{{Offset: 12}, {Offset: 11}}},
		"before from":   {NextOffset: 13, Entries: []wire.StreamRecord{{Offset: 9}}},
		"at next":       {NextOffset: 12, Entries: []wire.StreamRecord{{Offset: 10}, {Offset: 12}}},
		"next too soon": {NextOffset: 5},
	}
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		if req.Op == wire.OpStreamRead {
			resp := answers[req.Stream]
			resp.ID = req.ID
			fc.reply(resp)
		}
	})
	c := dial(t, testConfig(t, n.addr))
	for name := range answers {
		recs, next, err := c.ReadStream(context.Background(), name, 0, 10, 0)
		if !errors.Is(err, ErrMalformed) || recs != nil || next != 10 {
			t.Errorf("%s: got %d records, next %d, %v; want none, 10, ErrMalformed", name, len(recs), next, err)
		}
	}
}

// TestStreamHelpersRequests checks what the stream helpers send: procedure, keys and
// arguments, and that AppendBatch scopes its one invocation to the records' keys.
func TestStreamHelpersRequests(t *testing.T) {
	n := startNode(t, "n", func(fc *fakeConn, req wire.Request) {
		var v any = uint64(7)
		switch req.Procedure {
		case builtin.StreamAppendBatch:
			v = []uint64{1, 2}
		case builtin.StreamCreate:
			v = builtin.StreamDefinition{Name: "s"}
		case builtin.StreamDelete:
			v = builtin.NoArgs{}
		case builtin.StreamList:
			v = []builtin.StreamDefinition{{Name: "s"}}
		case builtin.StreamDescribe:
			fc.reply(wire.Response{ID: req.ID, Code: wire.CodeUnknownStream, Message: "unknown stream"})
			return
		}
		fc.reply(wire.Response{ID: req.ID, Value: value(t, v)})
	})
	c := dial(t, testConfig(t, n.addr))
	ctx := context.Background()
	at := time.UnixMilli(42)
	if off, err := c.Append(ctx, "s", []byte("k"), []byte("v"), WithEventTime(at)); err != nil || off != 7 {
		t.Fatalf("Append: %d, %v", off, err)
	}
	offs, err := c.AppendBatch(ctx, "s", []StreamRecord{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2"), EventTime: at}})
	if err != nil || len(offs) != 2 {
		t.Fatalf("AppendBatch: %v, %v", offs, err)
	}
	if _, err := c.AppendBatch(ctx, "s", []StreamRecord{{Key: []byte(""), Value: []byte("1")}}); !errors.Is(err, ErrBadArguments) {
		t.Errorf("AppendBatch with an empty key: got %v, want ErrBadArguments", err)
	}
	if err := c.Streams().Create(ctx, builtin.StreamDefinition{Name: "s", Compact: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.Streams().Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if l, err := c.Streams().List(ctx); err != nil || len(l) != 1 {
		t.Fatalf("ListStreams: %v, %v", l, err)
	}
	if _, err := c.Streams().Describe(ctx, "s"); !errors.Is(err, ErrUnknownStream) {
		t.Errorf("DescribeStream: got %v, want ErrUnknownStream", err)
	}
	got := map[string]wire.Request{}
	for _, r := range n.requests(wire.OpInvoke) {
		got[r.Procedure] = r
	}
	var app builtin.StreamAppendArgs
	if r := got[builtin.StreamAppend]; string(r.Key) != "k" || msgpack.Unmarshal(r.Args, &app) != nil || app.EventTime != 42 || app.Stream != "s" {
		t.Errorf("stream.append request %+v, args %+v", r, app)
	}
	var batch builtin.StreamAppendBatchArgs
	r := got[builtin.StreamAppendBatch]
	if len(r.Keys) != 2 || string(r.Keys[0]) != "a" || string(r.Keys[1]) != "b" || msgpack.Unmarshal(r.Args, &batch) != nil ||
		len(batch.Records) != 2 || batch.Records[1].EventTime != 42 || batch.Records[0].EventTime != 0 {
		t.Errorf("stream.append_batch request %+v, args %+v", r, batch)
	}
	for _, p := range []string{builtin.StreamCreate, builtin.StreamDelete, builtin.StreamList, builtin.StreamDescribe} {
		if r := got[p]; r.HasKey || len(r.Keys) != 0 {
			t.Errorf("%s: got key %q keys %q, want every partition", p, r.Key, r.Keys)
		}
	}
}
