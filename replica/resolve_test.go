package replica

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/procedures"
)

// resolveFSM is a cluster at the newest version running t.p at version 2, t.q at version
// 1 and module "app" (procedure m.add): one name of each kind resolve tells apart.
func resolveFSM(b testing.TB) *FSM {
	reg := procedures.Builtins()
	procedures.MustRegister(reg, "t.p", countBy("v1", 1))
	procedures.MustRegister(reg, "t.p@2", countBy("v2", 10))
	procedures.MustRegister(reg, "t.q", countBy("q", 1))
	f := newFSMWith(b, Config{Partitions: verParts}, reg)
	out := f.ApplyBatch([]*raft.Log{
		commandLog(1, &batch.Entry{Time: 1e9, Items: []batch.Item{newInit(b, reg), createStreamItem(verParts, "in")}}),
		commandLog(2, &batch.Entry{Time: 2e9, Items: []batch.Item{deployItem(b, "app", modSource("v1", 1))}}),
	})
	for i, items := range outcomesOf(out) {
		for j, it := range items {
			if it.Err != "" {
				b.Fatalf("entry %d item %d: %s", i+1, j, it.Err)
			}
		}
	}
	return f
}

// TestResolveAllocatesNothing: resolving an input's engine key, once per input, allocates
// nothing for any kind of name (DESIGN.md section 8: no allocation on the hot path), and
// gives the keys the engine runs.
func TestResolveAllocatesNothing(t *testing.T) {
	f := resolveFSM(t)
	defer f.Close()
	for i, c := range []struct{ name, key string }{{"t.q", "t.q"}, {"t.p", "t.p@2"}, {"m.add", "@m.add"}} {
		if key, err := f.resolve(c.name); key != c.key || err != nil {
			t.Errorf("#%d: got %q, %v, want %q", i, key, err, c.key)
		}
		if n := testing.AllocsPerRun(100, func() { f.resolve(c.name) }); n != 0 {
			t.Errorf("#%d: %s: got %v allocations, want 0", i, c.name, n)
		}
	}
}

// BenchmarkResolve measures finding the engine key of an invoked name, once per input on
// the apply goroutine: a version-1 registration, a version-2 one and a module's procedure.
func BenchmarkResolve(b *testing.B) {
	f := resolveFSM(b)
	defer f.Close()
	for _, name := range []string{"t.q", "t.p", "m.add"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := f.resolve(name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApplyVersionedInvokes measures applying entries of 256 invokes (no session) of
// a version-2 registration and of a module's procedure.
func BenchmarkApplyVersionedInvokes(b *testing.B) {
	for _, name := range []string{"t.p", "m.add"} {
		b.Run(name, func(b *testing.B) {
			f := resolveFSM(b)
			defer f.Close()
			var e batch.Entry
			for k := range 256 {
				e.Items = append(e.Items, invokeItem(name, fmt.Sprint("k", k%16)))
			}
			index := uint64(2)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				index++
				e.Time = 3e9 + int64(i)*1e6
				out := f.ApplyBatch([]*raft.Log{commandLog(index, &e)})
				if i == 0 {
					if it := outcomesOf(out)[0][0]; it.Err != "" {
						b.Fatal(it.Err)
					}
				}
			}
		})
	}
}
