package modules_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/procedures/modules"
	"github.com/vmihailenco/msgpack/v5"
)

// engine is a partition.Engine running the built-ins and one module, with a clock and
// log position that advance by one per input, as a sequencer's would.
type engine struct {
	reg *procedures.Registry
	eng *partition.Engine
	seq uint64
}

// builtinNames are the names of every built-in procedure and processor.
func builtinNames() []string {
	var names []string
	reg := procedures.Builtins()
	for _, i := range reg.List() {
		names = append(names, i.Name)
	}
	for _, p := range reg.ListProcessors() {
		names = append(names, p.Name)
	}
	return names
}

func mustCompile(t testing.TB, src string, opts modules.Options) *modules.Module {
	t.Helper()
	opts.Existing = builtinNames()
	m, err := modules.Compile("app.star", []byte(src), opts)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return m
}

func newEngine(t testing.TB, m *modules.Module, n int, sequential bool) *engine {
	t.Helper()
	reg := procedures.Builtins()
	if err := m.Register(reg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	eng, err := partition.NewEngine(partition.Config{Partitions: n, Sequential: sequential,
		Processors: reg.Processors(), ReplicatedTables: reg.ReplicatedTables(), Changelogs: reg.Changelogs()}, reg.NewHandler)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(eng.Close)
	return &engine{reg: reg, eng: eng}
}

// input builds an invocation of proc with key and args (msgpack-encoded unless nil) at
// the next log position.
func (e *engine) input(t testing.TB, proc, key string, args any) partition.Input {
	t.Helper()
	e.seq++
	in := partition.Input{Procedure: proc, Seq: e.seq, Time: 1_700_000_000e9 + int64(e.seq)*1e6}
	if args != nil {
		b, err := msgpack.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		in.Args = b
	}
	n := len(e.eng.Partitions())
	if info, _ := e.reg.Lookup(proc); info.Multi {
		in.Scope = partition.AllPartitions(n)
		return in
	}
	in.Key = []byte(key)
	in.Partition = partition.PartitionOf(in.Key, n)
	return in
}

// apply runs one batch of inputs and its processor phase, and returns "value error" per
// input.
func (e *engine) apply(batch []partition.Input) []string {
	var out []string
	for _, r := range e.eng.Execute(batch) {
		out = append(out, fmt.Sprintf("%x %v", r.Value, r.Err))
	}
	last := batch[len(batch)-1]
	for {
		st := e.eng.RunProcessors(partition.ProcessorPhase{Time: last.Time, Seq: last.Seq})
		if !st.Pending {
			break
		}
	}
	return out
}

// createStreams is the inputs that create the named streams.
func (e *engine) createStreams(t testing.TB, names ...string) []partition.Input {
	var ins []partition.Input
	for _, n := range names {
		ins = append(ins, e.input(t, builtin.StreamCreate, "", builtin.StreamDefinition{Name: n}))
	}
	return ins
}

// dump is every partition's hash and contents: tables, rows and stream records.
func (e *engine) dump(t testing.TB) string {
	t.Helper()
	var b bytes.Buffer
	for _, p := range e.eng.Partitions() {
		if h, rh := p.Hash(), p.RecomputeHash(); h != rh {
			t.Fatalf("partition %d: Hash %x, RecomputeHash %x (invariant 1)", p.ID(), h, rh)
		}
		fmt.Fprintf(&b, "partition %d hash %x tables %q streams %q\n", p.ID(), p.Hash(), p.Tables(), p.Streams())
		for _, tab := range p.Tables() {
			p.Scan(tab, partition.ScanOptions{}, func(k, v []byte) bool {
				fmt.Fprintf(&b, "  %s %q=%x\n", tab, k, v)
				return true
			})
		}
		for _, st := range p.Streams() {
			info, _ := p.StreamInfo(st)
			recs, _, err := p.ReadStream(st, info.FirstOffset, 1<<30)
			fmt.Fprintf(&b, "  stream %s %v\n", st, err)
			for _, r := range recs {
				fmt.Fprintf(&b, "    %d %q=%x @%d\n", r.Offset, r.Key, r.Value, r.EventTime)
			}
		}
	}
	return b.String()
}

// deadLetters returns the dead letters of stream+".dead" on every partition.
func (e *engine) deadLetters(t testing.TB, stream string) []partition.DeadLetter {
	t.Helper()
	var out []partition.DeadLetter
	for _, p := range e.eng.Partitions() {
		recs, _, err := p.ReadStream(stream+partition.DeadLetterSuffix, 0, 1<<30)
		if err != nil {
			continue
		}
		for _, r := range recs {
			var dl partition.DeadLetter
			if err := msgpack.Unmarshal(r.Value, &dl); err != nil {
				t.Fatal(err)
			}
			out = append(out, dl)
		}
	}
	return out
}
