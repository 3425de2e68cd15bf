package partition

import (
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
)

// TestOn checks Tx.On: every partition in the input's scope is reachable, with its own
// state; any other partition is ErrOutOfScope.
func TestOn(t *testing.T) {
	const parts = 5
	for _, seq := range []bool{false, true} {
		var report []string
		e := newEngine(t, Config{Partitions: parts, Sequential: seq}, procs{
			"probe": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
				report = append(report, fmt.Sprintf("home %d scope %v", tx.Partition(), tx.Scope()))
				for p := -1; p <= parts; p++ {
					v, err := tx.On(p)
					switch {
					case err != nil:
						if !errors.Is(err, ErrOutOfScope) || v != nil {
							return out, fmt.Errorf("On(%d) = %v, %v", p, v, err)
						}
						report = append(report, fmt.Sprintf("%d:out", p))
					case v.Partition() != p:
						return out, fmt.Errorf("On(%d) is partition %d", p, v.Partition())
					default:
						if err := v.Put("t", []byte("k"), fmt.Appendf(nil, "from %v", tx.Scope())); err != nil {
							return out, err
						}
						report = append(report, fmt.Sprintf("%d:in", p))
					}
				}
				return out, nil
			},
		})
		res := exec(e,
			Input{Procedure: "probe", Partition: 3},
			Input{Procedure: "probe", Scope: []int{1, 2, 4}},
			Input{Procedure: "probe", Scope: []int{0}},
		)
		for i, r := range res {
			if r.Err != "" {
				t.Fatalf("seq %t: input %d: %s", seq, i, r.Err)
			}
		}
		want := []string{
			"home 3 scope [3]", "-1:out", "0:out", "1:out", "2:out", "3:in", "4:out", "5:out",
			"home 1 scope [1 2 4]", "-1:out", "0:out", "1:in", "2:in", "3:out", "4:in", "5:out",
			"home 0 scope [0]", "-1:out", "0:in", "1:out", "2:out", "3:out", "4:out", "5:out",
		}
		if !reflect.DeepEqual(report, want) {
			t.Errorf("seq %t: got %v\nwant %v", seq, report, want)
		}
		wantRows := []string{"k=from [0]", "k=from [1 2 4]", "k=from [1 2 4]", "k=from [3]", "k=from [1 2 4]"}
		for p, part := range e.Partitions() {
			if got := fmt.Sprint(rows(part, "t")); got != "["+wantRows[p]+"]" {
				t.Errorf("seq %t: partition %d rows %s, want [%s]", seq, p, got, wantRows[p])
			}
		}
		checkHashes(t, e)
	}
}

// TestBadScope checks that an input with an invalid partition or scope fails with
// ErrBadScope without running, while the rest of its batch runs (DESIGN.md invariant 7).
func TestBadScope(t *testing.T) {
	for _, seq := range []bool{false, true} {
		var ran atomic.Int64 // the handler runs on every worker
		e := newEngine(t, Config{Partitions: 3, Sequential: seq}, procs{
			"put": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
				ran.Add(1)
				return append(out, "ran"...), tx.Put("t", in.Key, nil)
			},
		})
		bad := []Input{
			{Procedure: "put", Key: []byte("a"), Scope: []int{}},
			{Procedure: "put", Key: []byte("a"), Scope: []int{1, 0}},
			{Procedure: "put", Key: []byte("a"), Scope: []int{0, 0}},
			{Procedure: "put", Key: []byte("a"), Scope: []int{0, 1, 1, 2}},
			{Procedure: "put", Key: []byte("a"), Scope: []int{0, 3}},
			{Procedure: "put", Key: []byte("a"), Scope: []int{-1, 0}},
			{Procedure: "put", Key: []byte("a"), Scope: []int{3}},
			{Procedure: "put", Key: []byte("a"), Partition: -1},
			{Procedure: "put", Key: []byte("a"), Partition: 3},
			{Procedure: "put", Key: []byte("a"), Partition: 1 << 40},
		}
		var batch []Input
		for i, in := range bad {
			// Each bad input alone, then all of them between good ones.
			res := e.Execute([]Input{in})
			if !errors.Is(res[0].Err, ErrBadScope) || res[0].Value != nil {
				t.Errorf("seq %t #%d %+v: got %v, %q, want %v", seq, i, in, res[0].Err, res[0].Value, ErrBadScope)
			}
			batch = append(batch, Input{Procedure: "put", Key: []byte{'g', byte('0' + i)}, Partition: i % 3}, in)
		}
		if n := ran.Load(); n != 0 {
			t.Errorf("seq %t: the procedure ran %d times for bad inputs", seq, n)
		}
		for i, r := range e.Execute(batch) {
			good := i%2 == 0
			if good && (r.Err != nil || string(r.Value) != "ran") {
				t.Errorf("seq %t: batch #%d: got %v, %q, want \"ran\"", seq, i, r.Err, r.Value)
			}
			if !good && !errors.Is(r.Err, ErrBadScope) {
				t.Errorf("seq %t: batch #%d: got %v, want %v", seq, i, r.Err, ErrBadScope)
			}
		}
		total := 0
		for _, p := range e.Partitions() {
			total += p.Rows("t")
		}
		if n := ran.Load(); n != int64(len(bad)) || total != len(bad) {
			t.Errorf("seq %t: %d good inputs ran, %d rows; want %d", seq, n, total, len(bad))
		}
	}
}

// TestReplicatedTables checks replicated tables: an input reaching every partition writes
// every copy; any other input gets ErrReplicatedWrite and changes nothing; every input
// reads its local copy.
func TestReplicatedTables(t *testing.T) {
	const parts = 4
	for _, seq := range []bool{false, true} {
		var writeErr error
		e := newEngine(t, Config{Partitions: parts, ReplicatedTables: []string{"rep"}, Sequential: seq}, procs{
			// write puts Args under Key into rep (from the view of the last partition in scope,
			// to check that any view writes every copy), deletes "gone", and keeps going
			// whatever the outcome, so that a refused write is not undone by a failure.
			"write": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
				scope := tx.Scope()
				v, err := tx.On(scope[len(scope)-1])
				if err != nil {
					return out, err
				}
				writeErr = v.Put("rep", in.Key, in.Args)
				if string(in.Key) == "gone" {
					return out, nil
				}
				err = v.Delete("rep", []byte("gone"))
				if (err == nil) != (writeErr == nil) || errors.Is(err, ErrReplicatedWrite) != errors.Is(writeErr, ErrReplicatedWrite) {
					return out, fmt.Errorf("Put gave %v but Delete %v", writeErr, err)
				}
				return out, nil
			},
			"read": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
				for _, p := range tx.Scope() {
					v, err := tx.On(p)
					if err != nil {
						return out, err
					}
					val, ok := v.Get("rep", in.Key)
					out = fmt.Appendf(out, "%d:%s/%t ", p, val, ok)
					if err := v.Scan("rep", ScanOptions{}, func(k, val []byte) bool {
						out = fmt.Appendf(out, "%s ", k)
						return true
					}); err != nil {
						return out, err
					}
				}
				return out, nil
			},
		})
		all := AllPartitions(parts)
		if r := run1(e, Input{Procedure: "write", Key: []byte("gone"), Args: []byte("x"), Scope: all}); r.Err != "" || writeErr != nil {
			t.Fatalf("seq %t: seed: %v %v", seq, r, writeErr)
		}
		if r := run1(e, Input{Procedure: "write", Key: []byte("k"), Args: []byte("v1"), Scope: all}); r.Err != "" || writeErr != nil {
			t.Fatalf("seq %t: all-partition write: %v %v", seq, r, writeErr)
		}
		for _, p := range e.Partitions() {
			if got := fmt.Sprint(rows(p, "rep")); got != "[k=v1]" {
				t.Errorf("seq %t: partition %d rep = %s, want [k=v1]", seq, p.ID(), got)
			}
		}
		checkHashes(t, e)
		// Equal copies hash equally: every partition holds only the replicated table.
		if h := e.Hashes(); h[0] != h[1] || h[0] != h[2] || h[0] != h[3] {
			t.Errorf("seq %t: replicated copies hash differently: %x", seq, h)
		}

		before := dump(e)
		refused := []Input{
			{Procedure: "write", Key: []byte("k"), Args: []byte("v2"), Partition: 0},
			{Procedure: "write", Key: []byte("k"), Args: []byte("v2"), Partition: 3},
			{Procedure: "write", Key: []byte("k"), Args: []byte("v2"), Scope: []int{0}},
			{Procedure: "write", Key: []byte("k"), Args: []byte("v2"), Scope: []int{0, 1, 2}},
			{Procedure: "write", Key: []byte("k"), Args: []byte("v2"), Scope: []int{1, 2, 3}},
		}
		for i, in := range refused {
			writeErr = nil
			if r := run1(e, in); r.Err != "" {
				t.Errorf("seq %t #%d: input failed: %s", seq, i, r.Err)
			}
			if !errors.Is(writeErr, ErrReplicatedWrite) {
				t.Errorf("seq %t #%d %+v: Put got %v, want %v", seq, i, in, writeErr, ErrReplicatedWrite)
			}
			if after := dump(e); after != before {
				t.Errorf("seq %t #%d: state changed:\n%s\nwant\n%s", seq, i, after, before)
			}
		}

		reads := []struct {
			in   Input
			want string
		}{
			{Input{Procedure: "read", Key: []byte("k"), Partition: 2}, "2:v1/true k "},
			{Input{Procedure: "read", Key: []byte("k"), Scope: []int{1, 3}}, "1:v1/true k 3:v1/true k "},
			{Input{Procedure: "read", Key: []byte("gone"), Scope: all}, "0:/false k 1:/false k 2:/false k 3:/false k "},
		}
		for i, tt := range reads {
			if r := run1(e, tt.in); r.Err != "" || string(r.Value) != tt.want {
				t.Errorf("seq %t read #%d: got %v, want %q", seq, i, r, tt.want)
			}
		}
	}
}

// TestReplicatedTableOnePartition checks that with one partition a single-partition input
// reaches every partition and may write a replicated table.
func TestReplicatedTableOnePartition(t *testing.T) {
	e := newEngine(t, Config{Partitions: 1, ReplicatedTables: []string{"rep"}}, procs{
		"put": func(tx *Tx, in *Input, out []byte) ([]byte, error) { return out, tx.Put("rep", in.Key, nil) },
	})
	if err := runErr(e, Input{Procedure: "put", Key: []byte("k")}); err != nil {
		t.Fatalf("got %v, want success", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{DefaultConfig(), true},
		{Config{Partitions: 1}, true},
		{Config{Partitions: MaxPartitions}, true},
		{Config{Partitions: MaxPartitions + 1}, false},
		{Config{Partitions: -1}, false},
		{Config{ReplicatedTables: []string{"a", "b"}}, true},
		{Config{ReplicatedTables: []string{"a", "a"}}, false},
		{Config{ReplicatedTables: []string{""}}, false},
	}
	for i, tt := range tests {
		err := tt.cfg.Validate()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadConfig)) {
			t.Errorf("#%d %+v: got %v, want ok=%t", i, tt.cfg, err, tt.ok)
		}
		e, err := NewEngine(tt.cfg, procs{}.handler)
		if (err == nil) != tt.ok {
			t.Errorf("#%d: NewEngine got %v, want ok=%t", i, err, tt.ok)
		}
		if e != nil {
			e.Close()
		}
	}
}
