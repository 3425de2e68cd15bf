package procedures

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestPublishChangesRefuses: a refused declaration returns its typed error and leaves the
// registry (its changelogs and its fingerprint) unchanged.
func TestPublishChangesRefuses(t *testing.T) {
	long := strings.Repeat("x", partition.MaxNameBytes+1)
	for i, tt := range []struct {
		table, stream string
		want          error
	}{
		{"t", "other", ErrDuplicateChangelog}, // t already publishes
		{"u", "t.log", ErrBadChangelog},       // t.log is t's changelog
		{"rep", "rep.log", ErrBadChangelog},   // replicated
		{"sys.processors", "s", ErrBadChangelog},
		{"", "s", ErrBadChangelog},
		{long, "s", ErrBadChangelog},
		{"u", "", ErrBadChangelog},
		{"u", long, ErrBadChangelog},
	} {
		r := New()
		r.DeclareReplicatedTable("rep")
		if err := PublishChanges(r, "t", "t.log"); err != nil {
			t.Fatal(err)
		}
		fp := r.Fingerprint()
		err := PublishChanges(r, tt.table, tt.stream)
		if !errors.Is(err, tt.want) {
			t.Errorf("#%d PublishChanges(%q, %q): got %v, want %v", i, tt.table, tt.stream, err, tt.want)
		}
		if got := r.Changelogs(); !maps.Equal(got, map[string]string{"t": "t.log"}) || r.Fingerprint() != fp {
			t.Errorf("#%d: registry changed by a refused declaration: %v", i, got)
		}
	}
}

// TestPublishChangesFingerprint: nodes with different changelog declarations have
// different fingerprints, so they refuse to form a cluster.
func TestPublishChangesFingerprint(t *testing.T) {
	fps := map[uint64]string{}
	for name, decl := range map[string][][2]string{
		"none":   nil,
		"t":      {{"t", "log"}},
		"u":      {{"u", "log"}},
		"stream": {{"t", "log2"}},
		"both":   {{"t", "log"}, {"u", "log2"}},
	} {
		r := New()
		for _, d := range decl {
			if err := PublishChanges(r, d[0], d[1]); err != nil {
				t.Fatal(err)
			}
		}
		fp := r.Fingerprint()
		if other, dup := fps[fp]; dup {
			t.Errorf("%s and %s have the same fingerprint", name, other)
		}
		fps[fp] = name
	}
}

// TestPublishChangesKV: the kv table publishing to a compacted stream, through the
// procedures: the changelog holds the latest change per key, tombstones included, and a
// put before the stream exists fails with partition.ErrUnknownStream.
func TestPublishChangesKV(t *testing.T) {
	te := newTestEngine(t, 2, func(r *Registry) {
		if err := PublishChanges(r, KVTable, "kv.log"); err != nil {
			t.Fatal(err)
		}
	})
	before := te.snapshot(t)
	if _, err := invoke[bool](t, te, builtin.KVPut, "a", builtin.KVPutArgs{Value: []byte("1")}); !errors.Is(err, partition.ErrUnknownStream) {
		t.Fatalf("kv.put before kv.log exists: %v, want ErrUnknownStream", err)
	}
	if !te.snapshot(t).same(before) {
		t.Fatal("a refused kv.put changed the state")
	}
	mustInvoke[builtin.StreamDefinition](t, te, builtin.StreamCreate, "", builtin.StreamDefinition{Name: "kv.log", Compact: true})
	for _, s := range []struct{ proc, key, value string }{
		{builtin.KVPut, "a", "1"}, {builtin.KVPut, "b", "2"}, {builtin.KVPut, "a", "3"},
		{builtin.KVDelete, "b", ""}, {builtin.KVPut, "c", ""},
	} {
		if s.proc == builtin.KVPut {
			mustInvoke[bool](t, te, s.proc, s.key, builtin.KVPutArgs{Value: []byte(s.value)})
		} else {
			mustInvoke[bool](t, te, s.proc, s.key, nil)
		}
	}
	var got []string
	for _, p := range te.eng.Partitions() {
		recs, _, err := p.ReadStream("kv.log", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			v, deleted, err := partition.DecodeChange(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s:%q/%t", r.Key, v, deleted))
		}
	}
	want := map[string]bool{`a:"3"/false`: true, `b:""/true`: true, `c:""/false`: true}
	if len(got) != len(want) {
		t.Fatalf("changelog %v, want %v", got, want)
	}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("changelog %v, want %v", got, want)
		}
	}
}
