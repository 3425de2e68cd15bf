package procedures

import (
	"errors"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
)

func echoV(tag string) func(*partition.Tx, struct{}) (string, error) {
	return func(*partition.Tx, struct{}) (string, error) { return tag, nil }
}

// TestVersionedRegistrations: "name@N" registers version N of name beside version 1; a
// bad version or other flags than another version of the name are refused with the
// registry unchanged; later versions leave the version-1 fingerprint alone, so a binary
// that only adds them is compatible with a cluster at cluster version 1 (issue 22 item 2).
func TestVersionedRegistrations(t *testing.T) {
	old := New()
	MustRegister(old, "t.p", echoV("v1"))
	r := New()
	MustRegister(r, "t.p", echoV("v1"))
	MustRegister(r, "t.p@2", echoV("v2"))
	MustRegister(r, "t.only@3", echoV("v3"))
	MustRegister(r, "t.p@1@2", echoV("odd")) // the last "@" splits: version 2 of "t.p@1"
	for i, tc := range []struct {
		name string
		want error
	}{
		{"t.p@0", ErrBadName},
		{"t.p@x", ErrBadName},
		{"@2", ErrBadName},
		{"t.p@2", ErrDuplicate},
		{"t.p@1", ErrDuplicate}, // "t.p@1" is "t.p"
	} {
		if err := Register(r, tc.name, echoV("x")); !errors.Is(err, tc.want) {
			t.Errorf("#%d: %s: got %v, want %v", i, tc.name, err, tc.want)
		}
	}
	if err := Register(r, "t.p@3", echoV("x"), ReadOnly()); !errors.Is(err, ErrVersionFlags) {
		t.Errorf("other flags: got %v, want ErrVersionFlags", err)
	}
	if r.Fingerprint() != old.Fingerprint() {
		t.Errorf("registrations at versions 2 and 3 changed the version-1 fingerprint")
	}
	withV2 := New()
	MustRegister(withV2, "t.p", echoV("v1"))
	MustRegister(withV2, "t.p@2", echoV("v2"))
	if withV2.Fingerprint() != old.Fingerprint() {
		t.Errorf("adding t.p@2 changed the version-1 fingerprint")
	}
	if info, ok := r.Lookup("t.only"); !ok || info.Version != 3 || info.Name != "t.only" {
		t.Errorf("Lookup(t.only) = %+v %t, want t.only version 3", info, ok)
	}
	if info, ok := r.Lookup("t.p@2"); !ok || info.Version != 2 || info.Name != "t.p" {
		t.Errorf("Lookup(t.p@2) = %+v %t, want t.p version 2", info, ok)
	}
	names := map[string]int{}
	for _, p := range r.Catalog() {
		names[p.Name]++
	}
	if names["t.p"] != 1 || names["t.only"] != 1 {
		t.Errorf("catalogue names %v: want each name once", names)
	}
	if got := len(r.Newest()); got != 3 {
		t.Errorf("Newest: %d registrations, want one per name (3)", got)
	}
	if g, ok := r.Carries("t.p", 2); !ok || g.String() != "t.p@2" || g.Signature == "" {
		t.Errorf("Carries(t.p, 2) = %+v %t", g, ok)
	}
}

// TestVersionedProcessors: "name@N" registers another version of a processor's code;
// a version with another definition (input, outputs, tick hook) is refused, and versions
// leave the fingerprints alone (issue 22 item 2).
func TestVersionedProcessors(t *testing.T) {
	nop := func(*partition.Tx, partition.Record) error { return nil }
	r := New()
	MustRegisterProcessor(r, "t.proc", "in", nop)
	before, rest := r.Fingerprint(), r.RestFingerprint()
	MustRegisterProcessor(r, "t.proc@2", "in", nop)
	if r.Fingerprint() != before || r.RestFingerprint() != rest {
		t.Errorf("a second version changed the fingerprints")
	}
	for i, tc := range []struct {
		name, input string
		opts        []ProcessorOption
		want        error
	}{
		{"t.proc@2", "in", nil, ErrDuplicateProcessor},
		{"t.proc@3", "other", nil, ErrBadProcessor},
		{"t.proc@3", "in", []ProcessorOption{Emits("out")}, ErrBadProcessor},
		{"t.proc@3", "in", []ProcessorOption{OnTick(func(*partition.Tx) error { return nil })}, ErrBadProcessor},
		{"t.proc@0", "in", nil, ErrBadProcessor},
	} {
		if err := RegisterProcessor(r, tc.name, tc.input, nop, tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("#%d: %s: got %v, want %v", i, tc.name, err, tc.want)
		}
	}
	if got := len(r.CarriedProcessors()); got != 2 {
		t.Errorf("CarriedProcessors: %d, want 2", got)
	}
	if _, ok := r.ProcessorVersion("t.proc", 2); !ok || r.DefaultProcessorVersion("t.proc") != 1 {
		t.Errorf("ProcessorVersion(t.proc, 2) missing or default not 1")
	}
	if len(r.ListProcessors()) != 1 {
		t.Errorf("ListProcessors: %v, want one t.proc", r.ListProcessors())
	}
}
