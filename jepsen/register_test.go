package jepsen

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRegisterKeysRotate: every key takes exactly KeyOps operations, Keys keys at a time,
// so no key's history grows with the run (porcupine's search on one key is what bounds
// the check).
func TestRegisterKeysRotate(t *testing.T) {
	t.Parallel()
	r := &Register{Keys: 3, KeyOps: 10}
	count := map[string]int{}
	var order []string
	for range 300 {
		k := r.nextKey()
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	if len(count) != 30 {
		t.Fatalf("%d keys for 300 operations, want 30: %v", len(count), count)
	}
	for k, n := range count {
		if n != 10 {
			t.Errorf("key %s took %d operations, want 10", k, n)
		}
	}
	if order[0] != "r0" || order[3] != "r3" || order[29] != "r29" {
		t.Errorf("keys in order %v", order)
	}
}

// TestRegisterCheckIllegalFast: a history with one key plainly not linearizable and
// another too hard to decide gets its verdict, and its visualization, without waiting
// out the check's timeout on the hard key (porcupine's verbose search would explore it
// until then: the planted stale-read run spent a minute there).
func TestRegisterCheckIllegalFast(t *testing.T) {
	t.Parallel()
	const forever = int64(1) << 62
	hist := []Op{ // key a: 1 written, then 2 read
		{Process: 0, F: "write", Key: "a", Args: []int64{1}, Status: StatusOK, Start: 1, End: 2},
		{Process: 0, F: "read", Key: "a", Result: []int64{2}, Status: StatusOK, Start: 3, End: 4},
	}
	// Key b: 40 concurrent writes of unknown outcome, then a read of a value none wrote:
	// porcupine can only refute it by trying every subset of the writes.
	for i := range 40 {
		hist = append(hist, Op{Process: 1 + i, F: "write", Key: "b", Args: []int64{int64(i)}, Status: StatusInfo, Start: int64(10 + i), End: forever})
	}
	hist = append(hist, Op{Process: 41, F: "read", Key: "b", Result: []int64{999}, Status: StatusOK, Start: 100, End: 101})
	dir := t.TempDir()
	r := &Register{CheckTimeout: time.Minute}
	start := time.Now()
	v := r.Check(t.Context(), nil, hist, dir)
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("check took %v: want the illegal key decided well before the %v timeout", took, r.CheckTimeout)
	}
	if len(v) != 1 || v[0].Valid || v[0].Undecided {
		t.Fatalf("got %+v, want not linearizable", v)
	}
	if _, err := os.Stat(filepath.Join(dir, "linearizability.html")); err != nil {
		t.Error(err)
	}
}
