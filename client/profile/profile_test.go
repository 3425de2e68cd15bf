package profile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestResolvePrecedence: each field comes from the highest layer that sets it; the
// security choice is one field, so a higher layer's insecure is not mixed with a lower
// layer's certificates directory, and the other way round.
func TestResolvePrecedence(t *testing.T) {
	flags := Settings{Addrs: []string{"f:1"}}
	env := Settings{Addrs: []string{"e:1"}, User: "eve", CertsDir: "/env"}
	ctx := Settings{Addrs: []string{"c:1"}, User: "carol", ClusterID: "cid", Insecure: true, Timeout: time.Minute}
	for i, tc := range []struct {
		layers []Settings
		want   Settings
	}{
		{[]Settings{flags, env, ctx, Defaults()}, Settings{Addrs: []string{"f:1"}, User: "eve", ClusterID: "cid", CertsDir: "/env", Timeout: time.Minute}},
		{[]Settings{{}, env, ctx, Defaults()}, Settings{Addrs: []string{"e:1"}, User: "eve", ClusterID: "cid", CertsDir: "/env", Timeout: time.Minute}},
		{[]Settings{{}, {}, ctx, Defaults()}, Settings{Addrs: []string{"c:1"}, User: "carol", ClusterID: "cid", Insecure: true, Timeout: time.Minute}},
		{[]Settings{{}, {}, {}, Defaults()}, Defaults()},
		{[]Settings{{Insecure: true}, env, ctx}, Settings{Addrs: []string{"e:1"}, User: "eve", ClusterID: "cid", Insecure: true, Timeout: time.Minute}},
	} {
		got, err := Resolve(tc.layers...)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("#%d: got %+v, %v; want %+v", i, got, err, tc.want)
		}
	}
	if _, err := Resolve(Settings{Insecure: true, CertsDir: "/x"}); !errors.Is(err, ErrConflict) {
		t.Errorf("both in one layer: got %v, want ErrConflict", err)
	}
}

// TestFileRoundTrip: Set, Use, Save and Load keep every field; Set merges into an existing
// context, a new security choice replacing the old one.
func TestFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "contexts.yaml")
	f, err := Load(path)
	if err != nil || len(f.Contexts) != 0 {
		t.Fatalf("missing file: %+v, %v", f, err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.Set("prod", Settings{Addrs: []string{"n1:8001", "n2:8001"}, CertsDir: "/certs", User: "alice", Timeout: 10 * time.Second}))
	must(f.Set("dev", Settings{Insecure: true}))
	must(f.Set("prod", Settings{ClusterID: "c1"}))
	must(f.Set("dev", Settings{CertsDir: "/dev-certs"}))
	must(f.Use("dev"))
	must(f.Save(path))
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved file: %v, %v; want mode 0600", fi, err)
	}
	g, err := Load(path)
	must(err)
	want := &File{Current: "dev", Contexts: map[string]Settings{
		"prod": {Addrs: []string{"n1:8001", "n2:8001"}, CertsDir: "/certs", User: "alice", Timeout: 10 * time.Second, ClusterID: "c1"},
		"dev":  {CertsDir: "/dev-certs"},
	}}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("got %+v, want %+v", g, want)
	}
	s, name, err := g.Selected("")
	if err != nil || name != "dev" || s.CertsDir != "/dev-certs" {
		t.Fatalf("Selected: %+v %q %v", s, name, err)
	}
	must(g.Delete("dev"))
	if g.Current != "" {
		t.Fatalf("deleting the current context left Current %q", g.Current)
	}
}

// TestFileErrors: bad names, unknown contexts and bad files are typed errors, and a
// refused change leaves the file as it was.
func TestFileErrors(t *testing.T) {
	f := &File{}
	for i, name := range []string{"", "a b", "x/y", string(make([]byte, 65))} {
		if err := f.Set(name, Settings{}); !errors.Is(err, ErrBadName) {
			t.Errorf("#%d: Set(%q): got %v, want ErrBadName", i, name, err)
		}
	}
	if err := f.Set("x", Settings{Insecure: true, CertsDir: "/d"}); !errors.Is(err, ErrConflict) || len(f.Contexts) != 0 {
		t.Errorf("Set with both: got %v, contexts %v; want ErrConflict and nothing stored", err, f.Contexts)
	}
	for i, err := range []error{f.Use("nope"), f.Delete("nope"), func() error { _, _, err := f.Selected("nope"); return err }()} {
		if !errors.Is(err, ErrUnknownContext) {
			t.Errorf("#%d: got %v, want ErrUnknownContext", i, err)
		}
	}
	dir := t.TempDir()
	for i, text := range []string{
		"contexts: [1, 2]",
		"contexts:\n  a:\n    adrs: [x]\n",
		"current: b\ncontexts:\n  a:\n    insecure: true\n",
		"contexts:\n  a:\n    insecure: true\n    certs_dir: /d\n",
		"contexts:\n  'a b': {}\n",
		"contexts:\n  a:\n    timeout: soon\n",
	} {
		p := filepath.Join(dir, "f.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); !errors.Is(err, ErrBadFile) {
			t.Errorf("#%d: %q: got %v, want ErrBadFile", i, text, err)
		}
	}
}
