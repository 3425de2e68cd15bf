package partition

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
)

// TestReadersDuringExecute runs readers on every partition (Get, Scan, ReadStream, Hash,
// RecomputeHash, Tables, Rows, and read-only Query inputs) while Execute runs single- and
// multi-partition inputs. Under -race it checks that the reader API is safe, also with
// several readers of one partition at once; in any mode it checks that readers see only
// whole inputs (DESIGN.md invariant 2): rows x and y, always written together, are equal
// in any one Scan or Query, a counter never goes back, and the stream is dense.
//
// Each reader makes a fixed number of reads, and Execute runs batches until every reader
// is done, so the test's length does not depend on the schedule.
func TestReadersDuringExecute(t *testing.T) {
	const (
		parts      = 3
		perPart    = 20   // single-partition inputs per partition per batch
		reads      = 1000 // reads per reader
		minBatches = 20
	)
	bump := func(tx *Tx) error {
		v, _ := tx.Get("t", []byte("x"))
		n, _ := strconv.Atoi(string(v))
		next := []byte(strconv.Itoa(n + 1))
		if err := tx.Put("t", []byte("x"), next); err != nil {
			return err
		}
		if err := tx.Put("t", []byte("y"), next); err != nil {
			return err
		}
		_, err := testAppend(tx, "s", next)
		return err
	}
	ps := procs{
		"bump": func(tx *Tx, in *Input, out []byte) ([]byte, error) { return out, bump(tx) },
		"bump-all": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, p := range tx.Scope() {
				v, err := tx.On(p)
				if err != nil {
					return out, err
				}
				if err := bump(v); err != nil {
					return out, err
				}
			}
			return out, nil
		},
		// half-bump writes x only, then fails: readers must never see it.
		"half-bump": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			if err := tx.Put("t", []byte("x"), []byte("-1")); err != nil {
				return out, err
			}
			return out, errHandler
		},
		// read is a query: x and y of every partition in scope, and a write that must fail.
		"read": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, p := range tx.Scope() {
				v, err := tx.On(p)
				if err != nil {
					return out, err
				}
				x, _ := v.Get("t", []byte("x"))
				y, _ := v.Get("t", []byte("y"))
				if string(x) != string(y) {
					return out, fmt.Errorf("partition %d: x %q, y %q", p, x, y)
				}
				out = fmt.Appendf(out, "%s ", x)
			}
			if err := tx.Put("t", []byte("x"), nil); !errors.Is(err, ErrReadOnlyTx) {
				return out, fmt.Errorf("write in a query: %v", err)
			}
			return out, nil
		},
	}
	e := newEngine(t, Config{Partitions: parts}, ps)

	var wg sync.WaitGroup
	reader := func(p *Partition, kind int) {
		defer wg.Done()
		last, next := 0, uint64(0)
		h := ps.handler()
		for range reads {
			switch kind {
			case 0: // Get: x never goes back
				v, ok := p.Get("t", []byte("x"))
				if !ok {
					continue
				}
				n, err := strconv.Atoi(string(v))
				if err != nil || n < last {
					t.Errorf("partition %d: x = %q after %d", p.ID(), v, last)
					return
				}
				last = n
			case 1: // Scan: x and y of one scan are equal
				var got []string
				p.Scan("t", ScanOptions{}, func(k, v []byte) bool {
					got = append(got, string(v))
					return true
				})
				if len(got) != 0 && (len(got) != 2 || got[0] != got[1]) {
					t.Errorf("partition %d: scan saw %v", p.ID(), got)
					return
				}
			case 2: // ReadStream: dense, record i holds i+1
				recs, end, _ := p.ReadStream("s", next, 100) // the stream may not exist yet
				for _, r := range recs {
					if r.Offset != next || string(r.Value) != strconv.FormatUint(next+1, 10) || next >= end {
						t.Errorf("partition %d: record %d = {%d %q}, end %d", p.ID(), next, r.Offset, r.Value, end)
						return
					}
					next++
				}
			case 3: // Hash, RecomputeHash and the metadata readers
				_, _ = p.Hash(), p.RecomputeHash()
				_, _, _ = p.Tables(), p.Streams(), p.Rows("t")
			case 4: // Query, on this partition alone and on all of them
				in := Input{Procedure: "read", Partition: p.ID()}
				if last%2 == 1 {
					in = Input{Procedure: "read", Scope: AllPartitions(parts)}
				}
				last++
				if r := e.Query(&in, h); r.Err != nil {
					t.Errorf("partition %d: query: %v", p.ID(), r.Err)
					return
				}
			}
		}
	}
	for _, p := range e.Partitions() {
		for _, kind := range []int{0, 0, 1, 2, 3, 4, 4} {
			wg.Add(1)
			go reader(p, kind)
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	want := make([]int, parts)
	in := make([]Input, 0, parts*perPart+2)
	finished := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	b := 0
	for ; b < minBatches || !finished(); b++ {
		in = in[:0]
		for i := range parts * perPart {
			p := i % parts
			in = append(in, Input{Procedure: "bump", Partition: p, Seq: uint64(b*1000 + i)})
			want[p]++
			if i == parts*perPart/2 {
				in = append(in, Input{Procedure: "bump-all", Scope: AllPartitions(parts)})
				for p := range want {
					want[p]++
				}
				in = append(in, Input{Procedure: "half-bump", Partition: b % parts})
			}
		}
		for i, r := range e.Execute(in) {
			if r.Err != nil && in[i].Procedure != "half-bump" {
				t.Errorf("batch %d input %d: %v", b, i, r.Err) // not Fatal: readers still run
			}
		}
	}
	<-done
	t.Logf("%d batches ran while readers read", b)
	if t.Failed() {
		return
	}

	for p, part := range e.Partitions() {
		wantX := fmt.Sprint(want[p])
		if got := fmt.Sprint(rows(part, "t")); got != "[x="+wantX+" y="+wantX+"]" {
			t.Errorf("partition %d: rows %s, want x = y = %s", p, got, wantX)
		}
	}
	checkHashes(t, e)
}

// TestCloseStopsWorkers checks that Close stops every worker goroutine (TestMain's goleak
// check fails the run otherwise) and may be called twice.
func TestCloseStopsWorkers(t *testing.T) {
	for _, parts := range []int{1, 2, 8} {
		e, err := NewEngine(Config{Partitions: parts}, procs{
			"put": func(tx *Tx, in *Input, out []byte) ([]byte, error) { return out, tx.Put("t", in.Key, nil) },
		}.handler)
		if err != nil {
			t.Fatal(err)
		}
		var in []Input
		for p := range parts {
			in = append(in, Input{Procedure: "put", Key: []byte("k"), Partition: p})
		}
		in = append(in, Input{Procedure: "put", Key: []byte("m"), Scope: AllPartitions(parts)})
		for _, r := range e.Execute(in) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		e.Close()
		e.Close()
	}
}
