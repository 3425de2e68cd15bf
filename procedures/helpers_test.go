package procedures

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/vmihailenco/msgpack/v5"
)

// testEngine is a partition.Engine running a registry's procedures, with a clock and log
// position that advance by one per input, as a sequencer's would.
type testEngine struct {
	reg *Registry
	eng *partition.Engine
	n   int
	seq uint64
	// skew is added to every input's batch time: tests move the clock forward with it.
	skew int64
}

// newTestEngine builds an engine with n partitions running the built-ins plus whatever
// extra registers. It is closed when the test ends.
func newTestEngine(t tb, n int, extra ...func(*Registry)) *testEngine {
	t.Helper()
	return newTestEngineConfig(t, partition.Config{Partitions: n}, extra...)
}

func newTestEngineConfig(t tb, cfg partition.Config, extra ...func(*Registry)) *testEngine {
	t.Helper()
	reg := Builtins()
	for _, f := range extra {
		f(reg)
	}
	cfg.ReplicatedTables = reg.ReplicatedTables()
	cfg.Changelogs = reg.Changelogs()
	eng, err := partition.NewEngine(cfg, reg.NewHandler)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(eng.Close)
	return &testEngine{reg: reg, eng: eng, n: eng.Config().Partitions}
}

// input builds the input for proc: single-partition on key's partition, or for a
// multi-partition procedure on scope (all partitions when scope is nil).
func (te *testEngine) input(proc, key string, args []byte, scope []int) partition.Input {
	te.seq++
	in := partition.Input{Procedure: proc, Args: args, Seq: te.seq, Time: 1_700_000_000e9 + int64(te.seq) + te.skew}
	if key != "" {
		in.Key = []byte(key)
	}
	if info, ok := te.reg.Lookup(proc); ok && info.Multi {
		in.Scope = scope
		if scope == nil {
			in.Scope = partition.AllPartitions(te.n)
		}
		return in
	}
	in.Partition = partition.PartitionOf(in.Key, te.n)
	return in
}

// inputKeys builds the input of a multi-partition proc scoped to the keys' partitions, as
// the node builds an invocation with a key set.
func (te *testEngine) inputKeys(proc string, args []byte, keys ...string) partition.Input {
	var scope []int
	for p := 0; p < te.n; p++ {
		for _, k := range keys {
			if partition.PartitionOf([]byte(k), te.n) == p {
				scope = append(scope, p)
				break
			}
		}
	}
	return te.input(proc, "", args, scope)
}

// exec runs one input and returns a copy of its result value.
func (te *testEngine) exec(in partition.Input) ([]byte, error) {
	res := te.eng.Execute([]partition.Input{in})[0]
	return bytes.Clone(res.Value), res.Err
}

// encode msgpack-encodes args; nil encodes to no bytes at all.
func encode(t tb, args any) []byte {
	t.Helper()
	if args == nil {
		return nil
	}
	b, err := msgpack.Marshal(args)
	if err != nil {
		t.Fatalf("encode %T: %v", args, err)
	}
	return b
}

// decode strictly decodes a result into R.
func decode[R any](t tb, b []byte) R {
	t.Helper()
	var r R
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("decode %T from %x: %v", r, b, err)
	}
	return r
}

// invoke runs proc with key and msgpack-encoded args (multi-partition procedures on every
// partition) and returns its decoded result or its error.
func invoke[R any](t tb, te *testEngine, proc, key string, args any) (R, error) {
	t.Helper()
	return invokeScope[R](t, te, proc, key, args, nil)
}

// invokeScope is invoke with an explicit multi-partition scope.
func invokeScope[R any](t tb, te *testEngine, proc, key string, args any, scope []int) (R, error) {
	t.Helper()
	out, err := te.exec(te.input(proc, key, encode(t, args), scope))
	if err != nil {
		var zero R
		return zero, err
	}
	return decode[R](t, out), nil
}

// mustInvoke is invoke for calls that must succeed.
func mustInvoke[R any](t tb, te *testEngine, proc, key string, args any) R {
	t.Helper()
	r, err := invoke[R](t, te, proc, key, args)
	if err != nil {
		t.Fatalf("%s(%q, %+v): %v", proc, key, args, err)
	}
	return r
}

// state is everything observable about an engine's partitions.
type state struct {
	hashes []uint64
	dump   string
}

// snapshot captures every partition's hash and contents: tables, rows and stream records.
// It also checks the incremental hash against a full recomputation.
func (te *testEngine) snapshot(t tb) state {
	t.Helper()
	var s state
	var b bytes.Buffer
	for _, p := range te.eng.Partitions() {
		h, rh := p.Hash(), p.RecomputeHash()
		if h != rh {
			t.Fatalf("partition %d: Hash %x, RecomputeHash %x (invariant 1)", p.ID(), h, rh)
		}
		s.hashes = append(s.hashes, h)
		fmt.Fprintf(&b, "partition %d tables %q streams %q\n", p.ID(), p.Tables(), p.Streams())
		for _, tab := range p.Tables() {
			p.Scan(tab, partition.ScanOptions{}, func(k, v []byte) bool {
				fmt.Fprintf(&b, "  %s %x=%x\n", tab, k, v)
				return true
			})
		}
		for _, st := range p.Streams() {
			info, _ := p.StreamInfo(st)
			recs, _, err := p.ReadStream(st, info.FirstOffset, 1<<30)
			fmt.Fprintf(&b, "  stream %s %+v %v\n", st, info, err)
			for _, r := range recs {
				fmt.Fprintf(&b, "    %d %x=%x @%d\n", r.Offset, r.Key, r.Value, r.EventTime)
			}
		}
	}
	s.dump = b.String()
	return s
}

// checkDeterministic checks DESIGN.md invariant 1 for log: run on engines of n partitions
// (with extra registered), parallel or sequential, and cut into batches whole, one input
// at a time, or at random sizes up to maxBatch (from seed), it gives the same results and
// byte-identical state. It returns the first run's results, one "value error" string per
// input.
func checkDeterministic(t *testing.T, n int, log []partition.Input, maxBatch int, seed uint64, extra ...func(*Registry)) []string {
	t.Helper()
	var ref []string
	var refState state
	for i, run := range []struct {
		sequential bool
		batch      int // inputs per Execute; 0 = random sizes
	}{{false, len(log)}, {true, len(log)}, {false, 1}, {false, 0}, {true, 0}} {
		te := newTestEngineConfig(t, partition.Config{Partitions: n, Sequential: run.sequential}, extra...)
		rng := rand.New(rand.NewPCG(uint64(i), seed))
		var got []string
		for from := 0; from < len(log); {
			size := run.batch
			if size == 0 {
				size = 1 + rng.IntN(maxBatch)
			}
			to := min(from+size, len(log))
			for _, r := range te.eng.Execute(log[from:to]) {
				got = append(got, fmt.Sprintf("%x %v", r.Value, r.Err))
			}
			from = to
		}
		s := te.snapshot(t)
		if i == 0 {
			ref, refState = got, s
			continue
		}
		for j := range ref {
			if got[j] != ref[j] {
				t.Fatalf("run %d input %d (%s): got %s, want %s", i, j, log[j].Procedure, got[j], ref[j])
			}
		}
		if !s.same(refState) {
			t.Errorf("run %d: state differs: got hashes %x, want %x", i, s.hashes, refState.hashes)
		}
	}
	return ref
}

// same reports whether two states are identical.
func (s state) same(o state) bool {
	return fmt.Sprint(s.hashes) == fmt.Sprint(o.hashes) && s.dump == o.dump
}

// keyOn returns a key with the given prefix owned by partition p of n.
func keyOn(prefix string, p, n int) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if partition.PartitionOf([]byte(k), n) == p {
			return k
		}
	}
}

// step is one invocation of a table test and its expected outcome.
type step struct {
	proc    string
	key     string
	args    any
	want    any   // expected result; its type is the result type
	wantErr error // expected error (errors.Is); nil for success
}

// runSteps runs steps in order on te, checking each result or error.
func runSteps(t *testing.T, te *testEngine, steps []step) {
	t.Helper()
	for i, s := range steps {
		out, err := te.exec(te.input(s.proc, s.key, encode(t, s.args), nil))
		if s.wantErr != nil || err != nil {
			if !errors.Is(err, s.wantErr) {
				t.Errorf("#%d %s(%q): got error %v, want %v", i, s.proc, s.key, err, s.wantErr)
			}
			continue
		}
		got := reflect.New(reflect.TypeOf(s.want))
		dec := msgpack.NewDecoder(bytes.NewReader(out))
		dec.DisallowUnknownFields(true)
		if err := dec.Decode(got.Interface()); err != nil {
			t.Fatalf("#%d %s(%q): decode %x: %v", i, s.proc, s.key, out, err)
		}
		if !reflect.DeepEqual(got.Elem().Interface(), s.want) {
			t.Errorf("#%d %s(%q): got %+v, want %+v", i, s.proc, s.key, got.Elem().Interface(), s.want)
		}
	}
}

// tb is the part of testing.TB the helpers use; *testing.T, *testing.F and *rapid.T have it.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}
