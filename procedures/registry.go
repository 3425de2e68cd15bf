package procedures

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/cespare/xxhash/v2"
	"github.com/lockstepdb/lockstep/internal/canon"
	"github.com/lockstepdb/lockstep/partition"
)

// MaxNameBytes is the longest procedure name.
const MaxNameBytes = 128

// Info describes a registered procedure.
type Info struct {
	// Name is the name the procedure is invoked by, e.g. "kv.put", without a version.
	Name string
	// Version is the registration's version: 1 for "kv.put", N for "kv.put@N".
	Version uint32
	// Doc is a one-line description: what it does, its partition key, its result.
	Doc string
	// Args and Result are the Go types of the procedure's arguments and result.
	Args, Result reflect.Type
	// ReadOnly procedures never write; a write fails the input.
	ReadOnly bool
	// Multi procedures run as multi-partition inputs (a barrier) reaching every partition
	// unless the invocation names an explicit set of keys.
	Multi bool
}

// Option changes how a procedure is registered.
type Option func(*Info)

// ReadOnly marks a procedure as never writing.
func ReadOnly() Option { return func(i *Info) { i.ReadOnly = true } }

// MultiPartition marks a procedure as a multi-partition input.
func MultiPartition() Option { return func(i *Info) { i.Multi = true } }

// Doc sets the procedure's one-line description.
func Doc(text string) Option { return func(i *Info) { i.Doc = text } }

// entry is one registered procedure.
type entry struct {
	info    Info
	base    string // the name without its version (versions.go)
	version uint32
	id      int
	canon   bool // the result type may encode a map: results are rewritten canonically
	newInst func() instance
}

// Registry holds the procedures a node can run. Register every procedure before the
// registry is used by an engine; afterwards it is read-only and safe for concurrent use.
// Every node of a cluster must have the same registry (see Fingerprint).
type Registry struct {
	procs      map[string]*entry
	byID       []*entry
	replicated []string
	processors map[string]*processorEntry
	changelogs map[string]string // table → stream: see PublishChanges
}

// New returns an empty registry.
func New() *Registry { return &Registry{procs: map[string]*entry{}} }

// Register adds a procedure named name that takes arguments of type A and returns a
// result of type R, both encoded with msgpack. fn must be deterministic: see the package
// documentation for the rules.
func Register[A, R any](r *Registry, name string, fn func(tx *partition.Tx, args A) (R, error), opts ...Option) error {
	return register(r, name, fn, nil, opts...)
}

// register is Register with an optional codec for the arguments' common shapes and the
// results (newFast may be nil), which the reflective decoder backs.
func register[A, R any](r *Registry, name string, fn func(tx *partition.Tx, args A) (R, error), newFast func() fastCodec[A, R], opts ...Option) error {
	if len(name) == 0 || len(name) > MaxNameBytes {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	base, version, err := ParseVersioned(name)
	if err != nil {
		return err
	}
	name = VersionKey(base, version) // "p@1" is "p"
	if _, ok := r.procs[name]; ok {
		return fmt.Errorf("%w: %s", ErrDuplicate, name)
	}
	info := Info{Name: base, Version: version, Args: reflect.TypeFor[A](), Result: reflect.TypeFor[R]()}
	for _, o := range opts {
		o(&info)
	}
	for _, x := range r.byID {
		// A node checks an invocation (scope, read-only) before the log says which
		// version runs it: every version of a name has the same flags.
		if x.base == base && (x.info.ReadOnly != info.ReadOnly || x.info.Multi != info.Multi) {
			return fmt.Errorf("%w: %s: read-only and multi-partition must be those of %s", ErrVersionFlags, name, x.info.Name+"@"+fmt.Sprint(x.version))
		}
	}
	e := &entry{info: info, base: base, version: version, id: len(r.byID), canon: canon.MayHoldMap(info.Result)}
	e.newInst = func() instance {
		t := &typed[A, R]{name: name, fn: fn, readOnly: info.ReadOnly}
		if newFast != nil {
			t.fast = newFast()
		}
		return t
	}
	r.procs[name] = e
	r.byID = append(r.byID, e)
	return nil
}

// MustRegister is Register for procedure sets fixed at compile time; it panics on error.
func MustRegister[A, R any](r *Registry, name string, fn func(tx *partition.Tx, args A) (R, error), opts ...Option) {
	if err := Register(r, name, fn, opts...); err != nil {
		panic(err)
	}
}

// DeclareReplicatedTable names a table whose contents are the same in every partition.
func (r *Registry) DeclareReplicatedTable(name string) {
	for _, n := range r.replicated {
		if n == name {
			return
		}
	}
	r.replicated = append(r.replicated, name)
	sort.Strings(r.replicated)
}

// ReplicatedTables returns the declared replicated tables, for partition.Config.
func (r *Registry) ReplicatedTables() []string { return append([]string(nil), r.replicated...) }

// Lookup returns the procedure registered under name ("p" is version 1, "p@2" version 2).
// For a name without a version that this binary carries only at later versions, it
// returns the lowest of them. Every version of a name has the same flags.
func (r *Registry) Lookup(name string) (Info, bool) {
	e, ok := r.procs[name]
	if !ok {
		for _, x := range r.byID {
			if x.base == name && (e == nil || x.version < e.version) {
				e = x
			}
		}
		if e == nil {
			return Info{}, false
		}
	}
	return e.info, true
}

// List returns every registered procedure, ordered by name and version.
func (r *Registry) List() []Info {
	out := make([]Info, 0, len(r.byID))
	for _, e := range r.byID {
		out = append(out, e.info)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// Fingerprint summarises the procedure set at version 1 (names, argument and result
// types, flags; later versions, "p@2", are left out), the replicated tables, the
// processors (name, input, emitted streams, start, tick, the output streams it creates and
// their configuration) and the changelogs (table, stream). Nodes whose fingerprints differ
// must not form a cluster of cluster version 1; from version 2 on, the active
// registrations are compared one by one instead, and RestFingerprint for the rest.
func (r *Registry) Fingerprint() uint64 {
	d := xxhash.New()
	for _, i := range r.List() {
		if i.Version > 1 {
			continue
		}
		fmt.Fprintf(d, "%s|%s|%s|%t|%t\n", i.Name, i.Args, i.Result, i.ReadOnly, i.Multi)
	}
	r.writeRest(d)
	return d.Sum64()
}

func (r *Registry) writeRest(d *xxhash.Digest) {
	for _, t := range r.replicated {
		fmt.Fprintf(d, "replicated|%s\n", t)
	}
	r.writeProcessors(d)
	d.WriteString(r.changelogFingerprint())
}

func (r *Registry) writeTables(d *xxhash.Digest) {
	for _, t := range r.replicated {
		fmt.Fprintf(d, "replicated|%s\n", t)
	}
	d.WriteString(r.changelogFingerprint())
}

func (r *Registry) writeProcessors(d *xxhash.Digest) {
	for _, p := range r.ListProcessors() {
		fmt.Fprintf(d, "processor|%q|%q|%q|%t|%t\n", p.Name, p.Input, p.Emits, p.StartLatest, p.Tick)
		for _, o := range p.Outputs {
			fmt.Fprintf(d, "output|%q|%q|%+v\n", p.Name, o.Name, o.Config)
		}
	}
}

// NewHandler returns a partition.Handler that runs this registry's procedures. An engine
// calls it once per goroutine; the handler reuses decoding and encoding state between
// inputs.
func (r *Registry) NewHandler() partition.Handler { return newRunner(r) }
