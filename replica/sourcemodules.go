package replica

import (
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// Source modules (docs/sources.md, "CREATE SOURCE"): a "source" module is one CREATE
// SOURCE the deploying leader compiled (package sql) into a plan.Source: which Kafka
// topic to read, into which stream, in which format, with which session timeout. Its
// source in the log is the encoded plan.Source; it registers no code, so replicas run
// nothing for it: the nodes read the active source modules from their applied state and
// run the sources' workers (package connect), which join the source's consumer group as
// members named after the nodes, so that which node reads which Kafka partition is the
// group's assignment, decided in the log. On apply every replica checks, alike, that the
// stream it writes (and its dead-letter stream, unless the deploy creates it) exists,
// and creates the dead-letter stream in the same step as the module becomes active.
//
// The kind is admitted from cluster version VersionSources (4): a binary of version 3
// refuses a "source" deploy, so a cluster admits it only once every member runs a binary
// that admits it too.

// ModuleKindSource is the kind of source modules.
const ModuleKindSource = "source"

// SourceCompiler compiles "source" modules: it decodes and validates the definition and
// registers nothing.
type SourceCompiler struct{}

// Compile implements Compiler.
func (SourceCompiler) Compile(name string, source []byte, _ *procedures.Registry) error {
	s, err := plan.DecodeSource(source)
	if err != nil {
		return err
	}
	if s.ModuleName() != name {
		return fmt.Errorf("%w: source %s deployed as module %s, want %s", plan.ErrBadPlan, s.Name, name, s.ModuleName())
	}
	return nil
}

// Streams implements streamDeclarer: the dead-letter stream, when the deploy creates it.
func (SourceCompiler) Streams(source []byte) ([]plan.StreamDef, error) {
	s, err := plan.DecodeSource(source)
	if err != nil {
		return nil, err
	}
	return s.Streams(), nil
}

// Reads implements streamReader: the streams the source writes that must exist.
func (SourceCompiler) Reads(source []byte) ([]string, error) {
	s, err := plan.DecodeSource(source)
	if err != nil {
		return nil, err
	}
	if s.CreateDeadLetter {
		return []string{s.Stream}, nil
	}
	return []string{s.Stream, s.DeadLetter}, nil
}

// streamReader is a Compiler whose modules need streams to exist when they are deployed.
type streamReader interface {
	Reads(source []byte) ([]string, error)
}

// checkReads refuses the module of kind with source if a stream it needs does not exist
// on part.
func (f *FSM) checkReads(name, kind string, source []byte, part streamHolder) error {
	r, ok := f.cfg.Compilers[kind].(streamReader)
	if !ok {
		return nil
	}
	names, err := r.Reads(source)
	if err != nil {
		return fmt.Errorf("%w: module %s: %w", ErrBadModule, name, err)
	}
	for _, s := range names {
		if _, ok := part.StreamInfo(s); !ok {
			return fmt.Errorf("%w: module %s: stream %s does not exist", ErrBadModule, name, s)
		}
	}
	return nil
}

// SourceModule is one active source: its module name and definition.
type SourceModule struct {
	Module string
	// Version is the module's version: it changes when the source is dropped and
	// created again.
	Version uint32
	Source  *plan.Source
}

// Sources returns the active sources, by module name, as applied so far. Safe for
// concurrent use.
func (f *FSM) Sources() []SourceModule {
	d := f.depView.Load()
	var out []SourceModule
	for i := range d.Modules {
		m := &d.Modules[i]
		if !m.Active() || m.Kind != ModuleKindSource {
			continue
		}
		s, err := plan.DecodeSource(m.Source)
		if err != nil {
			continue // a node that cannot decode it is incompatible (refreshModules)
		}
		out = append(out, SourceModule{Module: m.Name, Version: m.Current().Version, Source: s})
	}
	return out
}

// DeploymentIndex returns the log index at which the deployment (cluster version,
// registrations, modules) last changed: a caller that cached what it read of it reads it
// again when this moves. Safe for concurrent use.
func (f *FSM) DeploymentIndex() uint64 { return f.depView.Load().Index }

// checkSourceRemove refuses the removal of the SQL module name while an active source
// writes into one of its streams: the error names the source.
func checkSourceRemove(d *Deployment, name string) error {
	var gone *plan.Plan
	for i := range d.Modules {
		m := &d.Modules[i]
		if m.Name == name && m.Active() && m.Kind == ModuleKindSQL {
			if _, p, err := DecodeSQLSource(m.Source); err == nil {
				gone = p
			}
		}
	}
	if gone == nil {
		return nil
	}
	for i := range d.Modules {
		m := &d.Modules[i]
		if !m.Active() || m.Kind != ModuleKindSource {
			continue
		}
		s, err := plan.DecodeSource(m.Source)
		if err != nil {
			continue
		}
		for _, r := range gone.Relations {
			if r.Name == s.Stream {
				return fmt.Errorf("%w: module %s: source %s writes into %s: drop source %s first", ErrBadModule, name, s.Name, r.Name,
					strings.TrimPrefix(m.Name, plan.SourceModulePrefix))
			}
		}
	}
	return nil
}
