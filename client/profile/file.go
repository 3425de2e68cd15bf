package profile

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"gopkg.in/yaml.v3"
)

// File is the contexts file: named Settings and the one in use.
//
//	current: prod
//	contexts:
//	  prod:
//	    addrs: [n1.internal:8001, n2.internal:8001]
//	    certs_dir: /etc/lockstep/certs
//	    user: alice
//	  dev:
//	    addrs: [127.0.0.1:8001]
//	    insecure: true
type File struct {
	// Current names the context commands use when none is asked for; empty: none.
	Current string `yaml:"current,omitempty" json:"current"`
	// Contexts are the named settings.
	Contexts map[string]Settings `yaml:"contexts,omitempty" json:"contexts"`
}

// maxFileBytes bounds the contexts file: it holds a few addresses per context.
const maxFileBytes = 1 << 20

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// CheckName reports whether name may name a context.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w %q: want 1 to 64 of A-Z a-z 0-9 . _ -", ErrBadName, name)
	}
	return nil
}

// DefaultPath returns where the contexts file is: $LOCKSTEP_CONFIG, else
// $XDG_CONFIG_HOME/lockstep/contexts.yaml, else $HOME/.config/lockstep/contexts.yaml.
func DefaultPath(getenv func(string) string) (string, error) {
	if p := getenv(EnvConfig); p != "" {
		return p, nil
	}
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "lockstep", "contexts.yaml"), nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "lockstep", "contexts.yaml"), nil
	}
	return "", fmt.Errorf("%w: set %s, XDG_CONFIG_HOME or HOME", ErrNoHome, EnvConfig)
}

// Load reads the contexts file at path; a missing file is an empty File.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return &File{Contexts: map[string]Settings{}}, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("%w %s: %d bytes, more than %d", ErrBadFile, path, len(b), maxFileBytes)
	}
	f := &File{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil && len(bytes.TrimSpace(b)) > 0 {
		return nil, fmt.Errorf("%w %s: %w", ErrBadFile, path, err)
	}
	if f.Contexts == nil {
		f.Contexts = map[string]Settings{}
	}
	for _, name := range slices.Sorted(maps.Keys(f.Contexts)) {
		if err := CheckName(name); err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrBadFile, path, err)
		}
		if err := f.Contexts[name].Check(); err != nil {
			return nil, fmt.Errorf("%w %s: context %q: %w", ErrBadFile, path, name, err)
		}
	}
	if _, ok := f.Contexts[f.Current]; f.Current != "" && !ok {
		return nil, fmt.Errorf("%w %s: current context %q: %w", ErrBadFile, path, f.Current, ErrUnknownContext)
	}
	return f, nil
}

// Save writes f to path whole: a temporary file in the same directory, renamed over it,
// mode 0600 (the file names certificate paths and users); the directory is made 0700.
func (f *File) Save(path string) error {
	b, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".contexts-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Set stores s as context name, replacing the fields s sets and keeping the others (as
// kubectl's set-context does); a new context is made current if none is.
func (f *File) Set(name string, s Settings) error {
	if err := CheckName(name); err != nil {
		return err
	}
	old := f.Contexts[name]
	if s.Insecure || s.CertsDir != "" {
		old.CertsDir, old.Insecure = "", false // a new security choice replaces the old one
	}
	merged, err := Resolve(s, old)
	if err != nil {
		return err
	}
	if f.Contexts == nil {
		f.Contexts = map[string]Settings{}
	}
	f.Contexts[name] = merged
	if f.Current == "" {
		f.Current = name
	}
	return nil
}

// Use makes name the current context.
func (f *File) Use(name string) error {
	if _, ok := f.Contexts[name]; !ok {
		return fmt.Errorf("%w %q: %s", ErrUnknownContext, name, f.known())
	}
	f.Current = name
	return nil
}

// Delete removes context name; if it was current, none is.
func (f *File) Delete(name string) error {
	if _, ok := f.Contexts[name]; !ok {
		return fmt.Errorf("%w %q: %s", ErrUnknownContext, name, f.known())
	}
	delete(f.Contexts, name)
	if f.Current == name {
		f.Current = ""
	}
	return nil
}

// Selected returns the settings of context name, or of the current context if name is
// empty, and the name used; no current context gives zero Settings and "".
func (f *File) Selected(name string) (Settings, string, error) {
	if name == "" {
		name = f.Current
	}
	if name == "" {
		return Settings{}, "", nil
	}
	s, ok := f.Contexts[name]
	if !ok {
		return Settings{}, "", fmt.Errorf("%w %q: %s", ErrUnknownContext, name, f.known())
	}
	return s, name, nil
}

// Names returns the contexts' names, sorted.
func (f *File) Names() []string { return slices.Sorted(maps.Keys(f.Contexts)) }

func (f *File) known() string {
	if len(f.Contexts) == 0 {
		return "the file has no contexts (lockstep context set)"
	}
	return fmt.Sprintf("the file has %v", f.Names())
}
