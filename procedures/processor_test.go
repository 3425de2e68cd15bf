package procedures_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

func nopProcessor(*partition.Tx, partition.Record) error { return nil }

// TestRegisterProcessorRefuses: a refused registration returns its typed error and leaves
// the registry (its processors and its fingerprint) unchanged.
func TestRegisterProcessorRefuses(t *testing.T) {
	for i, tt := range []struct {
		name, input string
		emits       []string
		want        error
	}{
		{"self", "a", []string{"a"}, procedures.ErrProcessorCycle},             // emits to its own input
		{"back", "c", []string{"a"}, procedures.ErrProcessorCycle},             // a → b → c → a
		{"back2", "b", []string{"x", "a"}, procedures.ErrProcessorCycle},       // a → b → a
		{"ab", "z", nil, procedures.ErrDuplicateProcessor},                     // name taken
		{"", "z", nil, procedures.ErrBadProcessor},                             // empty name
		{"noinput", "", nil, procedures.ErrBadProcessor},                       // empty stream
		{"badout", "z", []string{""}, procedures.ErrBadProcessor},              // empty emitted stream
		{"longin", string(make([]byte, 125)), nil, procedures.ErrBadProcessor}, // no room for ".dead"
	} {
		r := procedures.New()
		procedures.MustRegisterProcessor(r, "ab", "a", nopProcessor, procedures.Emits("b"))
		procedures.MustRegisterProcessor(r, "bc", "b", nopProcessor, procedures.Emits("c"))
		fp := r.Fingerprint()
		err := procedures.RegisterProcessor(r, tt.name, tt.input, nopProcessor, procedures.Emits(tt.emits...))
		if !errors.Is(err, tt.want) {
			t.Errorf("#%d: got %v, want %v", i, err, tt.want)
		}
		if n := len(r.ListProcessors()); n != 2 || r.Fingerprint() != fp {
			t.Errorf("#%d: registry changed by a refused registration (%d processors)", i, n)
		}
	}
	// Not a cycle: a diamond, and a second consumer of a stream.
	r := procedures.New()
	procedures.MustRegisterProcessor(r, "ab", "a", nopProcessor, procedures.Emits("b", "c"))
	procedures.MustRegisterProcessor(r, "bd", "b", nopProcessor, procedures.Emits("d"))
	procedures.MustRegisterProcessor(r, "cd", "c", nopProcessor, procedures.Emits("d"))
	procedures.MustRegisterProcessor(r, "ad", "a", nopProcessor, procedures.Emits("d"))
}

// TestProcessorFingerprint: nodes with different processor sets have different
// fingerprints, so they refuse to form a cluster.
func TestProcessorFingerprint(t *testing.T) {
	base := func() *procedures.Registry { return procedures.New() }
	fps := map[uint64]string{}
	for name, reg := range map[string]func(*procedures.Registry){
		"none":  func(*procedures.Registry) {},
		"p":     func(r *procedures.Registry) { procedures.MustRegisterProcessor(r, "p", "a", nopProcessor) },
		"q":     func(r *procedures.Registry) { procedures.MustRegisterProcessor(r, "q", "a", nopProcessor) },
		"input": func(r *procedures.Registry) { procedures.MustRegisterProcessor(r, "p", "b", nopProcessor) },
		"emits": func(r *procedures.Registry) {
			procedures.MustRegisterProcessor(r, "p", "a", nopProcessor, procedures.Emits("x"))
		},
		"latest": func(r *procedures.Registry) {
			procedures.MustRegisterProcessor(r, "p", "a", nopProcessor, procedures.StartLatest())
		},
		"tick": func(r *procedures.Registry) {
			procedures.MustRegisterProcessor(r, "p", "a", nopProcessor, procedures.OnTick(func(*partition.Tx) error { return nil }))
		},
		"output": func(r *procedures.Registry) {
			procedures.MustRegisterProcessor(r, "p", "a", nopProcessor, procedures.Output("x", partition.StreamConfig{}))
		},
		"output config": func(r *procedures.Registry) {
			procedures.MustRegisterProcessor(r, "p", "a", nopProcessor, procedures.Output("x", partition.StreamConfig{Compact: true}))
		},
	} {
		r := base()
		reg(r)
		fp := r.Fingerprint()
		if other, dup := fps[fp]; dup {
			t.Errorf("%s and %s have the same fingerprint", name, other)
		}
		fps[fp] = name
	}
}

// TestWindowOperators: the declared operators are listed sorted and once each, a bad name
// is refused, and the declaration, which only reports, leaves the fingerprint alone.
func TestWindowOperators(t *testing.T) {
	r := procedures.New()
	procedures.MustRegisterProcessor(r, "p", "a", nopProcessor, procedures.WindowOperators("w2", "w1", "w2"))
	plain := procedures.New()
	procedures.MustRegisterProcessor(plain, "p", "a", nopProcessor)
	if got := r.ListProcessors()[0].Windows; len(got) != 2 || got[0] != "w1" || got[1] != "w2" {
		t.Fatalf("Windows: got %q, want [w1 w2]", got)
	}
	if r.Fingerprint() != plain.Fingerprint() {
		t.Fatal("declaring window operators changed the fingerprint")
	}
	for i, name := range []string{"", string(make([]byte, partition.MaxNameBytes))} {
		err := procedures.RegisterProcessor(procedures.New(), "p", "a", nopProcessor, procedures.WindowOperators(name))
		if !errors.Is(err, procedures.ErrBadProcessor) {
			t.Errorf("#%d: got %v, want ErrBadProcessor", i, err)
		}
	}
}

// TestOutputsRefused: a processor's declared outputs are refused with ErrBadProcessor,
// naming the processor and the stream, for a bad configuration, a bad name, and a stream
// another processor declares with another configuration; the registry is unchanged. The
// same stream declared alike by two processors is fine, and the outputs are listed, sorted,
// and emitted.
func TestOutputsRefused(t *testing.T) {
	keep := partition.StreamConfig{MaxRecords: 10}
	for i, tt := range []struct {
		out  string
		cfg  partition.StreamConfig
		want string // in the error
	}{
		{"x", partition.StreamConfig{MaxAgeMs: -1}, "output stream x"},
		{"", partition.StreamConfig{}, `emitted stream ""`},
		{"shared", partition.StreamConfig{}, "declared by first with another configuration"},
	} {
		r := procedures.New()
		procedures.MustRegisterProcessor(r, "first", "in1", nopProcessor, procedures.Output("shared", keep))
		fp := r.Fingerprint()
		err := procedures.RegisterProcessor(r, "second", "in2", nopProcessor, procedures.Output(tt.out, tt.cfg))
		if !errors.Is(err, procedures.ErrBadProcessor) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "second") {
			t.Errorf("#%d: got %v, want ErrBadProcessor naming second and %q", i, err, tt.want)
		}
		if n := len(r.ListProcessors()); n != 1 || r.Fingerprint() != fp {
			t.Errorf("#%d: registry changed by a refused registration (%d processors)", i, n)
		}
	}
	r := procedures.New()
	procedures.MustRegisterProcessor(r, "first", "in1", nopProcessor, procedures.Output("shared", keep))
	procedures.MustRegisterProcessor(r, "second", "in2", nopProcessor, procedures.Output("shared", keep),
		procedures.Output("a", partition.StreamConfig{}), procedures.Emits("b"))
	info := r.ListProcessors()[1]
	if got := fmt.Sprint(info.Emits, info.Outputs); got != "[a b shared] [{a {0 0 0 false}} {shared {10 0 0 false}}]" {
		t.Errorf("second: emits and outputs %s", got)
	}
}
