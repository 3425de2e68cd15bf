package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEdit: an edit is saved and the file returned as saved; a failed edit writes
// nothing and names the path; LoadDefault finds the file through the environment.
func TestEdit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "contexts.yaml")
	f, err := Edit(path, func(f *File) error { return f.Set("prod", Settings{Addrs: []string{"a:1"}, Insecure: true}) })
	if err != nil || f.Contexts["prod"].Addrs[0] != "a:1" {
		t.Fatalf("Edit: %+v, %v", f, err)
	}
	before, _ := os.ReadFile(path)
	_, err = Edit(path, func(f *File) error {
		f.Contexts = nil
		return f.Use("nope")
	})
	if !errors.Is(err, ErrUnknownContext) || !strings.Contains(err.Error(), path) {
		t.Errorf("failed edit: %v, want ErrUnknownContext naming %s", err, path)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("a failed edit changed the file:\n%s\nwas\n%s", after, before)
	}
	got, p, err := LoadDefault(func(k string) string { return map[string]string{EnvConfig: path}[k] })
	if err != nil || p != path || len(got.Contexts) != 1 {
		t.Errorf("LoadDefault: %+v, %q, %v", got, p, err)
	}
	if _, _, err := LoadDefault(func(string) string { return "" }); !errors.Is(err, ErrNoHome) {
		t.Errorf("LoadDefault without a home: %v, want ErrNoHome", err)
	}
}
