package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The determinism property test drives the engine with generated inputs whose Args are a
// small program of Tx operations, interpreted by scriptHandler. Every operation a procedure
// can perform appears, including failing and panicking inputs and Rand/Now.

type opKind byte

const (
	opPut opKind = iota
	opDelete
	opGet
	opScan
	opAppend
	opStreamLen
	opRand
	opNow
	opOn
	opPartitionOf
	opScope
	opFail
	opPanic
	opScanWrite // a write inside a scan callback: always ErrWriteDuringScan
	opCreateStream
	opDeleteStream
	opStreamInfo
	numOps
)

var opNames = [...]string{"put", "delete", "get", "scan", "append", "streamlen", "rand", "now",
	"on", "partitionof", "scope", "fail", "panic", "scanwrite", "createstream", "deletestream", "streaminfo"}

func (k opKind) String() string { return opNames[k] }

// scriptTables are the tables scripts use; "rep" is replicated.
var scriptTables = [...]string{"t0", "t1", "rep"}

// op is one Tx operation of a script.
type op struct {
	Kind    opKind
	View    uint8 // which partition of the scope to act on (mod scope length); for opOn a raw partition number
	Table   uint8 // index into scriptTables; for streams, stream "s0" or "s1"
	Reverse bool
	Check   bool // a Tx error fails the input (otherwise it is written into the result)
	Limit   uint8
	Key     string // row key; for opScan the start key (none if empty)
	Value   string // row value or record; for opScan the end key (none if empty)
}

func encodeScript(ops []op) []byte {
	var b []byte
	for _, o := range ops {
		var flags byte
		if o.Reverse {
			flags |= 1
		}
		if o.Check {
			flags |= 2
		}
		b = append(b, byte(o.Kind), o.View, o.Table, flags, o.Limit)
		b = binary.AppendUvarint(b, uint64(len(o.Key)))
		b = append(b, o.Key...)
		b = binary.AppendUvarint(b, uint64(len(o.Value)))
		b = append(b, o.Value...)
	}
	return b
}

func decodeScript(b []byte) ([]op, error) {
	var ops []op
	str := func() (string, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return "", errors.New("bad script string")
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, nil
	}
	for len(b) > 0 {
		if len(b) < 5 || opKind(b[0]) >= numOps {
			return nil, errors.New("bad script op")
		}
		o := op{Kind: opKind(b[0]), View: b[1], Table: b[2], Reverse: b[3]&1 != 0, Check: b[3]&2 != 0, Limit: b[4]}
		b = b[5:]
		var err error
		if o.Key, err = str(); err != nil {
			return nil, err
		}
		if o.Value, err = str(); err != nil {
			return nil, err
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// scriptHandler interprets an input's script; its result is a trace of everything the
// operations returned, so any difference in what an input saw shows up in its result.
func scriptHandler() Handler {
	return HandlerFunc(func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		ops, err := decodeScript(in.Args)
		if err != nil {
			return out, err
		}
		for i, o := range ops {
			out = fmt.Appendf(out, "%d.%s:", i, o.Kind)
			scope := tx.Scope()
			v, err := tx.On(scope[int(o.View)%len(scope)])
			if err != nil {
				return out, fmt.Errorf("own scope: %w", err) // never: the view is in scope
			}
			table := scriptTables[int(o.Table)%len(scriptTables)]
			stream := fmt.Sprintf("s%d", o.Table%2)
			var opErr error
			switch o.Kind {
			case opPut:
				opErr = v.Put(table, []byte(o.Key), []byte(o.Value))
			case opDelete:
				opErr = v.Delete(table, []byte(o.Key))
			case opGet:
				val, ok := v.Get(table, []byte(o.Key))
				out = fmt.Appendf(out, "%q/%t", val, ok)
			case opScan:
				opts := ScanOptions{Reverse: o.Reverse, Limit: int(o.Limit)}
				if o.Key != "" {
					opts.Start = []byte(o.Key)
				}
				if o.Value != "" {
					opts.End = []byte(o.Value)
				}
				opErr = v.Scan(table, opts, func(k, val []byte) bool {
					out = fmt.Appendf(out, "%s=%s,", k, val)
					return true
				})
			case opAppend:
				var off uint64
				// Limit is the event time in ms (0: the batch time); Key is the record key.
				off, opErr = v.Append(stream, []byte(o.Key), []byte(o.Value), int64(o.Limit))
				out = fmt.Appendf(out, "@%d", off)
			case opCreateStream:
				// Limit picks the bounds (count, bytes, age from the batch time), Reverse
				// compaction; a Limit of 255 asks for an impossible (negative) bound.
				cfg := StreamConfig{MaxRecords: int64(o.Limit % 4), MaxBytes: int64(o.Limit/4%3) * 6,
					MaxAgeMs: int64(o.Limit/12%2) * 500, Compact: o.Reverse}
				if o.Limit == 255 {
					cfg.MaxBytes = -1
				}
				opErr = v.CreateStream(stream, cfg)
			case opDeleteStream:
				opErr = v.DeleteStream(stream)
			case opStreamInfo:
				info, ok := v.StreamInfo(stream)
				out = fmt.Appendf(out, "%+v/%t/%v", info, ok, v.Streams())
			case opStreamLen:
				out = fmt.Appendf(out, "%d", v.StreamLen(stream))
			case opRand:
				out = fmt.Appendf(out, "%d,%d", tx.Rand().Uint64(), v.Rand().IntN(1000))
			case opNow:
				out = fmt.Appendf(out, "%s", tx.Now().Format("2006-01-02T15:04:05.999999999Z07:00"))
			case opOn:
				p, err := tx.On(int(o.View))
				if err != nil {
					out = fmt.Appendf(out, "%v", err)
				} else {
					out = fmt.Appendf(out, "%d", p.Partition())
				}
			case opPartitionOf:
				out = fmt.Appendf(out, "%d/%d", tx.PartitionOf([]byte(o.Key)), tx.Partitions())
			case opScope:
				out = fmt.Appendf(out, "%v@%d", tx.Scope(), tx.Partition())
			case opFail:
				return out, fmt.Errorf("op %d failed: %s", i, o.Value)
			case opPanic:
				panic(fmt.Sprintf("op %d: %s", i, o.Value))
			case opScanWrite:
				opErr = v.Scan(table, ScanOptions{}, func(k, val []byte) bool {
					if err := v.Put(table, k, []byte("x")); !errors.Is(err, ErrWriteDuringScan) {
						panic(fmt.Sprintf("write during scan: %v", err))
					}
					return true
				})
			}
			if opErr != nil {
				if o.Check {
					return out, fmt.Errorf("op %d: %w", i, opErr)
				}
				out = fmt.Appendf(out, "err(%v)", opErr)
			}
			out = append(out, ' ')
		}
		return out, nil
	})
}

// genOp draws one script operation. Keys and values come from small sets so that
// overwrites, deletes of existing rows and scan boundaries on existing keys are common.
func genOp(t *rapid.T, parts int) op {
	key := rapid.SampledFrom([]string{"a", "b", "c", "d", "e", "f", "g", "h"})
	k := rapid.IntRange(0, 99).Draw(t, "kind")
	var kind opKind
	switch {
	case k < 30:
		kind = opPut
	case k < 40:
		kind = opDelete
	case k < 52:
		kind = opGet
	case k < 60:
		kind = opScan
	case k < 68:
		kind = opAppend
	case k < 71:
		kind = opCreateStream
	case k < 72:
		kind = opDeleteStream
	case k < 74:
		kind = opStreamInfo
	case k < 77:
		kind = opStreamLen
	case k < 82:
		kind = opRand
	case k < 85:
		kind = opNow
	case k < 88:
		kind = opOn
	case k < 90:
		kind = opPartitionOf
	case k < 92:
		kind = opScope
	case k < 95:
		kind = opFail
	case k < 98:
		kind = opPanic
	default:
		kind = opScanWrite
	}
	o := op{
		Kind:  kind,
		View:  uint8(rapid.IntRange(0, parts).Draw(t, "view")),
		Table: uint8(rapid.IntRange(0, len(scriptTables)-1).Draw(t, "table")),
		Check: rapid.IntRange(0, 3).Draw(t, "check") == 0,
		Key:   key.Draw(t, "key"),
		Value: rapid.StringMatching(`[a-z]{0,4}`).Draw(t, "value"),
	}
	if kind == opAppend && rapid.Bool().Draw(t, "event time") {
		o.Limit = uint8(rapid.IntRange(1, 255).Draw(t, "event ms"))
	}
	if kind == opCreateStream {
		o.Limit = uint8(rapid.IntRange(0, 255).Draw(t, "bounds"))
		o.Reverse = rapid.Bool().Draw(t, "compact")
	}
	if kind == opScan {
		o.Reverse = rapid.Bool().Draw(t, "reverse")
		o.Limit = uint8(rapid.IntRange(0, 4).Draw(t, "limit"))
		o.Key = rapid.SampledFrom([]string{"", "b", "c", "dd"}).Draw(t, "start")
		o.Value = rapid.SampledFrom([]string{"", "c", "f", "z"}).Draw(t, "end")
	}
	if rapid.IntRange(0, 50).Draw(t, "bad") == 0 {
		o.Key = "" // an empty key: ErrEmptyKey for writes
	}
	return o
}

// genLog draws a log of inputs for parts partitions: mostly single-partition inputs, some
// multi-partition ones (partial scopes and all partitions), a few with bad partitions or
// scopes. Batch times repeat within a batch as the sequencer stamps them.
func genLog(t *rapid.T, parts int) []Input {
	n := rapid.IntRange(100, 400).Draw(t, "inputs")
	log := make([]Input, n)
	now := int64(1_764_400_000_000_000_000)
	for i := range log {
		if rapid.IntRange(0, 7).Draw(t, "new batch time") == 0 {
			now += rapid.Int64Range(1, 1e9).Draw(t, "time step")
		}
		in := Input{Procedure: "script", Seq: uint64(1000 + i), Time: now}
		switch c := rapid.IntRange(0, 99).Draw(t, "shape"); {
		case c < 82:
			in.Partition = rapid.IntRange(0, parts-1).Draw(t, "partition")
		case c < 88:
			in.Scope = AllPartitions(parts)
		case c < 98:
			var scope []int
			for p := 0; p < parts; p++ {
				if rapid.Bool().Draw(t, "in scope") {
					scope = append(scope, p)
				}
			}
			if len(scope) == 0 {
				scope = []int{rapid.IntRange(0, parts-1).Draw(t, "only")}
			}
			in.Scope = scope
		default:
			bad := [][]int{{}, {parts}, {0, 0}, {-1}}
			if parts > 1 {
				bad = append(bad, []int{1, 0})
			}
			if rapid.Bool().Draw(t, "bad partition") {
				in.Partition = rapid.SampledFrom([]int{-1, parts}).Draw(t, "bad p")
			} else {
				in.Scope = rapid.SampledFrom(bad).Draw(t, "bad scope")
			}
		}
		in.Key = []byte(fmt.Sprintf("key%d", i))
		in.Args = encodeScript(rapid.SliceOfN(rapid.Custom(func(t *rapid.T) op { return genOp(t, parts) }), 0, 6).Draw(t, "ops"))
		log[i] = in
	}
	return log
}

// runLog executes log on a new engine, in chunks of the given sizes (the rest in one
// chunk), and returns its results and state dump. The engine is closed before returning.
func runLog(t *rapid.T, cfg Config, log []Input, chunks []int) ([]result, string) {
	e, err := NewEngine(cfg, scriptHandler)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	defer e.Close()
	var res []result
	rest := log
	for _, c := range chunks {
		if c > len(rest) {
			c = len(rest)
		}
		res = append(res, copyResults(e.Execute(rest[:c]))...)
		rest = rest[c:]
	}
	res = append(res, copyResults(e.Execute(rest))...)
	for _, p := range e.Partitions() {
		if h, r := p.Hash(), p.RecomputeHash(); h != r {
			t.Fatalf("%+v: partition %d: Hash() = %016x, RecomputeHash() = %016x", cfg, p.ID(), h, r)
		}
	}
	return res, dump(e)
}

// TestDeterminism checks DESIGN.md invariant 1 (same log, same state): a log of mixed
// inputs gives byte-identical results, state and hashes whether it runs on the calling
// goroutine (Sequential) or on one worker per partition, and whatever the batch boundaries.
func TestDeterminism(t *testing.T) {
	var total struct{ ok, failed, panicked, changes int }
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SampledFrom([]int{1, 2, 3, 4, 7}).Draw(t, "partitions")
		log := genLog(t, parts)
		// t1 publishes its changes to s1, which scripts create, delete and append to too.
		cfg := Config{Partitions: parts, ReplicatedTables: []string{"rep"}, Changelogs: map[string]string{"t1": "s1"}}
		seq := cfg
		seq.Sequential = true

		wantRes, wantState := runLog(t, seq, log, nil)
		// Changelog records of t1 left in s1: puts ("+…") and tombstones ("-").
		total.changes += strings.Count(wantState, `="+`) + strings.Count(wantState, `="-"`)
		chunks := rapid.SliceOfN(rapid.IntRange(1, 64), 1, 20).Draw(t, "chunks")
		runs := []struct {
			name   string
			cfg    Config
			chunks []int
		}{
			{"parallel, one batch", cfg, nil},
			{"parallel, chunked", cfg, chunks},
			{"sequential, chunked", seq, chunks},
		}
		for _, r := range runs {
			res, state := runLog(t, r.cfg, log, r.chunks)
			for i := range log {
				if res[i].String() != wantRes[i].String() {
					t.Fatalf("%s: input %d (%+v): got %v, want %v", r.name, i, log[i], res[i], wantRes[i])
				}
			}
			if state != wantState {
				t.Fatalf("%s: state differs:\n%s\nwant\n%s", r.name, state, wantState)
			}
		}
		for _, r := range wantRes {
			switch {
			case r.Err == "":
				total.ok++
			case strings.HasPrefix(r.Err, "procedure panicked:"):
				total.panicked++
			default:
				total.failed++
			}
		}
	})
	// The logs must exercise what the invariant is about.
	if total.ok == 0 || total.failed == 0 || total.panicked == 0 || total.changes == 0 {
		t.Errorf("generated inputs: %+v; want some of each", total)
	}
	t.Logf("generated inputs: %+v", total)
}
