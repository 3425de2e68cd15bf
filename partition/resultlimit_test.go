package partition

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
)

// resultProcs are test procedures whose result length is their argument (a decimal
// number of bytes). "write" first writes a row and appends a record on every partition in
// scope; "read" only reads.
func resultProcs() procs {
	fill := func(in *Input, out []byte) ([]byte, error) {
		n, err := strconv.Atoi(string(in.Args))
		if err != nil {
			return out, err
		}
		for range n {
			out = append(out, 'r')
		}
		return out, nil
	}
	return procs{
		"write": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, p := range tx.Scope() {
				v, err := tx.On(p)
				if err != nil {
					return out, err
				}
				if err := v.Put("t", fmt.Appendf(nil, "k%d", in.Seq), []byte("written")); err != nil {
					return out, err
				}
				if _, err := testAppend(v, "s", []byte("appended")); err != nil {
					return out, err
				}
			}
			return fill(in, out)
		},
		"read": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, p := range tx.Scope() {
				v, err := tx.On(p)
				if err != nil {
					return out, err
				}
				v.Get("t", []byte("k1"))
			}
			return fill(in, out)
		},
	}
}

// TestResultLimit checks that a result longer than Config.MaxResultBytes fails its input
// with ErrResultTooLarge and undoes its writes and appends, leaving every partition's
// state and hash as before (DESIGN.md invariants 2 and 7), while a result of exactly the
// limit succeeds; for single- and multi-partition inputs, in a batch with other inputs.
func TestResultLimit(t *testing.T) {
	for _, limit := range []int{100, DefaultMaxResultBytes} {
		for _, seq := range []bool{false, true} {
			t.Run(fmt.Sprintf("limit=%d/sequential=%t", limit, seq), func(t *testing.T) {
				cfg := Config{Partitions: 3, Sequential: seq}
				if limit != DefaultMaxResultBytes {
					cfg.MaxResultBytes = limit // the default is what a zero value gets
				}
				e := newEngine(t, cfg, resultProcs())
				arg := func(n int) []byte { return []byte(strconv.Itoa(n)) }
				var seqNo uint64
				input := func(multi bool, size int) Input {
					seqNo++
					in := Input{Procedure: "write", Partition: int(seqNo % 3), Args: arg(size), Seq: seqNo}
					if multi {
						in.Scope = []int{0, 1, 2}
					}
					return in
				}
				if r := run1(e, input(false, 1)); r.Err != "" {
					t.Fatalf("seed: %v", r.Err)
				}
				for _, multi := range []bool{false, true} {
					before := dump(e)
					// Too large, alone and between two inputs of the same batch that fail.
					for i, batch := range [][]Input{
						{input(multi, limit+1)},
						{input(multi, limit+1), input(multi, 2*limit)},
					} {
						for j, r := range e.Execute(batch) {
							if !errors.Is(r.Err, ErrResultTooLarge) || r.Value != nil {
								t.Fatalf("multi=%t #%d.%d: got (%d bytes, %v), want %v", multi, i, j, len(r.Value), r.Err, ErrResultTooLarge)
							}
						}
						if got := dump(e); got != before {
							t.Fatalf("multi=%t #%d: state changed by inputs that failed:\n%s\nwant:\n%s", multi, i, got, before)
						}
						checkHashes(t, e)
					}
					// Exactly at the limit: the result and its effects, beside a failing one.
					rs := e.Execute([]Input{input(multi, limit), input(multi, limit+1), input(multi, 0)})
					if rs[0].Err != nil || len(rs[0].Value) != limit {
						t.Fatalf("multi=%t at the limit: got (%d bytes, %v), want %d bytes", multi, len(rs[0].Value), rs[0].Err, limit)
					}
					if !errors.Is(rs[1].Err, ErrResultTooLarge) {
						t.Fatalf("multi=%t over the limit in a batch: got %v, want %v", multi, rs[1].Err, ErrResultTooLarge)
					}
					if rs[2].Err != nil {
						t.Fatalf("multi=%t after a failure in a batch: %v", multi, rs[2].Err)
					}
					if dump(e) == before {
						t.Fatalf("multi=%t: the inputs within the limit changed nothing", multi)
					}
					checkHashes(t, e)
				}
			})
		}
	}
}

// TestQueryResultLimit checks that a Query, single- or multi-partition, whose result is
// longer than Config.MaxResultBytes fails with ErrResultTooLarge, and one of exactly the
// limit succeeds.
func TestQueryResultLimit(t *testing.T) {
	const limit = 300
	e := newEngine(t, Config{Partitions: 3, MaxResultBytes: limit}, resultProcs())
	h := resultProcs().handler()
	for _, scope := range [][]int{nil, {0, 2}} {
		for i, tc := range []struct {
			size    int
			wantErr error
		}{{limit, nil}, {limit + 1, ErrResultTooLarge}, {5 * limit, ErrResultTooLarge}} {
			in := Input{Procedure: "read", Partition: 1, Scope: scope, Args: []byte(strconv.Itoa(tc.size))}
			r := e.Query(&in, h)
			if !errors.Is(r.Err, tc.wantErr) {
				t.Fatalf("scope %v #%d: got %v, want %v", scope, i, r.Err, tc.wantErr)
			}
			if want := tc.size; tc.wantErr == nil && len(r.Value) != want {
				t.Fatalf("scope %v #%d: got %d bytes, want %d", scope, i, len(r.Value), want)
			}
			if tc.wantErr != nil && r.Value != nil {
				t.Fatalf("scope %v #%d: got a value of %d bytes with the error", scope, i, len(r.Value))
			}
		}
	}
}

// TestResultLimitConfig checks the default and the bounds of Config.MaxResultBytes.
func TestResultLimitConfig(t *testing.T) {
	for i, tc := range []struct {
		max     int
		wantErr bool
	}{{0, false}, {1, false}, {MaxResultBytesLimit, false}, {-1, true}, {MaxResultBytesLimit + 1, true}, {4 << 20, true}} {
		err := Config{MaxResultBytes: tc.max}.Validate()
		if got := err != nil; got != tc.wantErr || (err != nil && !errors.Is(err, ErrBadConfig)) {
			t.Fatalf("#%d: MaxResultBytes %d: got %v, want error %t", i, tc.max, err, tc.wantErr)
		}
	}
	e := newEngine(t, Config{}, resultProcs())
	if got := e.Config().MaxResultBytes; got != DefaultMaxResultBytes {
		t.Fatalf("default MaxResultBytes: got %d, want %d", got, DefaultMaxResultBytes)
	}
	if got := DefaultConfig().MaxResultBytes; got != DefaultMaxResultBytes {
		t.Fatalf("DefaultConfig().MaxResultBytes: got %d, want %d", got, DefaultMaxResultBytes)
	}
}
