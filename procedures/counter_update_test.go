package procedures

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// counterAddGetPut is counter.add as it was before Tx.Update: a Get, then a Put.
func counterAddGetPut(tx *partition.Tx, a builtin.CounterAddArgs) (int64, error) {
	key := tx.Key()
	if err := checkKey(key); err != nil {
		return 0, err
	}
	cur, _, err := getInt64(tx, CounterTable, key)
	if err != nil {
		return 0, err
	}
	n, ok := addInt64(cur, a.Delta)
	if !ok {
		return 0, fmt.Errorf("%d + %d: %w", cur, a.Delta, ErrCounterOverflow)
	}
	if err := putInt64(tx, CounterTable, key, n); err != nil {
		return 0, err
	}
	return n, nil
}

// TestCounterAddUpdateKeepsHash pins counter.add's state across its move to Tx.Update:
// the same adds (overflowing ones among them) give the same results, errors and partition
// hashes as the Get-then-Put version.
func TestCounterAddUpdateKeepsHash(t *testing.T) {
	const parts = 3
	build := func(fn func(*partition.Tx, builtin.CounterAddArgs) (int64, error)) *partition.Engine {
		reg := New()
		if err := register(reg, builtin.CounterAdd, fn, newCounterAddArgs); err != nil {
			t.Fatal(err)
		}
		eng, err := partition.NewEngine(partition.Config{Partitions: parts}, reg.NewHandler)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(eng.Close)
		return eng
	}
	engines := [2]*partition.Engine{build(counterAdd), build(counterAddGetPut)}
	rng := rand.New(rand.NewPCG(8, 8))
	var overflows int
	for i := range 5000 {
		d := int64(rng.IntN(1000)) - 300
		if rng.IntN(10) == 0 {
			d = math.MaxInt64 - int64(rng.IntN(3))
		}
		args, _ := msgpack.Marshal(builtin.CounterAddArgs{Delta: d})
		key := fmt.Appendf(nil, "c%d", rng.IntN(40))
		in := partition.Input{Procedure: builtin.CounterAdd, Key: key, Partition: partition.PartitionOf(key, parts), Args: args, Seq: uint64(i + 1)}
		var res [2]partition.Result
		for e, eng := range engines {
			r := eng.Execute([]partition.Input{in})[0]
			res[e] = partition.Result{Value: bytes.Clone(r.Value), Err: r.Err}
		}
		if !bytes.Equal(res[0].Value, res[1].Value) || fmt.Sprint(res[0].Err) != fmt.Sprint(res[1].Err) {
			t.Fatalf("#%d: %s += %d: Update %x %v, Get and Put %x %v", i, key, d, res[0].Value, res[0].Err, res[1].Value, res[1].Err)
		}
		if res[0].Err != nil {
			overflows++
		}
		p := in.Partition
		if h0, h1 := engines[0].Partitions()[p].Hash(), engines[1].Partitions()[p].Hash(); h0 != h1 {
			t.Fatalf("#%d: partition %d: hash %x with Update, %x with Get and Put", i, p, h0, h1)
		}
	}
	for p := range parts {
		if h, r := engines[0].Partitions()[p].Hash(), engines[0].Partitions()[p].RecomputeHash(); h != r {
			t.Fatalf("partition %d: running hash %x, recomputed %x", p, h, r)
		}
	}
	if overflows < 100 {
		t.Fatalf("only %d overflows: the test does not exercise the failing add", overflows)
	}
}
