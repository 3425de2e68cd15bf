package procedures

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/lockstepdb/lockstep/partition"
)

// Versioned registrations (docs/procedures.md, Deploying and upgrading). A procedure is
// registered as "name" (version 1 of itself) or "name@N" (version N, N >= 2); a binary may
// carry several versions of one name. Clients invoke the name alone: which version runs is
// replicated state of the cluster (the replica's active registrations), switched through
// the log at one index on every replica. A Registry only says what this binary carries.

// MaxVersion is the highest version a registration may carry.
const MaxVersion = 1 << 20

// Registration names one version of a procedure and its signature: what must be the same
// on every node that runs it.
type Registration struct {
	// Name is the name clients invoke, without a version.
	Name string `msgpack:"n"`
	// Version is the registration's version, 1 or more.
	Version uint32 `msgpack:"v"`
	// Signature describes the argument and result types and the flags, as text.
	Signature string `msgpack:"s"`
}

// String returns "name@N" (also for version 1).
func (g Registration) String() string {
	return g.Name + "@" + strconv.FormatUint(uint64(g.Version), 10)
}

// VersionKey returns the key a registration of name at version v is held under: name for
// version 1, "name@v" otherwise.
func VersionKey(name string, v uint32) string {
	if v <= 1 {
		return name
	}
	return name + "@" + strconv.FormatUint(uint64(v), 10)
}

// ParseVersioned splits "name@N" into name and N; a name without "@" is version 1. It
// returns an error wrapping ErrBadName for a bad version.
func ParseVersioned(s string) (string, uint32, error) {
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return s, 1, nil
	}
	v, err := strconv.ParseUint(s[i+1:], 10, 32)
	if err != nil || v < 1 || v > MaxVersion || i == 0 {
		return "", 0, fmt.Errorf("%w: %q: want name@N with N from 1 to %d", ErrBadName, s, MaxVersion)
	}
	return s[:i], uint32(v), nil
}

func signature(i *Info) string {
	return fmt.Sprintf("args=%s result=%s readonly=%t multi=%t", i.Args, i.Result, i.ReadOnly, i.Multi)
}

// Carried returns every procedure registration of this binary, by name and version.
func (r *Registry) Carried() []Registration {
	out := make([]Registration, 0, len(r.byID))
	for _, e := range r.byID {
		out = append(out, Registration{Name: e.base, Version: e.version, Signature: signature(&e.info)})
	}
	slices.SortFunc(out, func(a, b Registration) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return int(a.Version) - int(b.Version)
	})
	return out
}

// Newest returns, for every procedure name, the highest version this binary carries: the
// active registrations of a cluster it bootstraps.
func (r *Registry) Newest() []Registration {
	var out []Registration
	for _, g := range r.Carried() {
		if n := len(out); n > 0 && out[n-1].Name == g.Name {
			out[n-1] = g
			continue
		}
		out = append(out, g)
	}
	return out
}

// Carries returns this binary's registration of name at version v.
func (r *Registry) Carries(name string, v uint32) (Registration, bool) {
	e, ok := r.procs[VersionKey(name, v)]
	if !ok {
		return Registration{}, false
	}
	return Registration{Name: name, Version: v, Signature: signature(&e.info)}, true
}

// RestFingerprint summarises what is not versioned — the replicated tables, the processors
// and the changelogs — which must be identical on every node of a cluster whose active
// procedures are replicated (cluster version 2).
func (r *Registry) RestFingerprint() uint64 {
	d := xxhash.New()
	r.writeRest(d)
	return d.Sum64()
}

// TablesFingerprint summarises the replicated tables and the changelogs: what must be
// identical on every node from cluster version 3 on, where the processors that run are
// the active ones (each compared by its registration's signature) and a binary may carry
// others.
func (r *Registry) TablesFingerprint() uint64 {
	d := xxhash.New()
	r.writeTables(d)
	return d.Sum64()
}

// Processor versions: registered as "name@N" like procedures (RegisterProcessor); a
// cluster at cluster version 2 or later replicates which version of each runs.

func processorSignature(i *ProcessorInfo) string {
	return fmt.Sprintf("input=%q emits=%q outputs=%+v start_latest=%t tick=%t", i.Input, i.Emits, i.Outputs, i.StartLatest, i.Tick)
}

// CarriedProcessors returns every processor registration of this binary, by name and
// version.
func (r *Registry) CarriedProcessors() []Registration {
	var out []Registration
	for _, info := range r.ListProcessors() {
		e := r.processors[info.Name]
		vs := slices.Sorted(maps.Keys(e.versions))
		for _, v := range vs {
			out = append(out, Registration{Name: info.Name, Version: v, Signature: processorSignature(&e.info)})
		}
	}
	return out
}

// CarriesProcessor returns this binary's registration of the processor name at version v.
func (r *Registry) CarriesProcessor(name string, v uint32) (Registration, bool) {
	e, ok := r.processors[name]
	if !ok {
		return Registration{}, false
	}
	if _, ok := e.versions[v]; !ok {
		return Registration{}, false
	}
	return Registration{Name: name, Version: v, Signature: processorSignature(&e.info)}, true
}

// ProcessorVersion returns the code of version v of the processor name.
func (r *Registry) ProcessorVersion(name string, v uint32) (ProcessorCode, bool) {
	e, ok := r.processors[name]
	if !ok {
		return ProcessorCode{}, false
	}
	c, ok := e.versions[v]
	return c, ok
}

// DefaultProcessorVersion returns the version of the processor name that runs where no
// active version is replicated (cluster version 1): its lowest.
func (r *Registry) DefaultProcessorVersion(name string) uint32 {
	e, ok := r.processors[name]
	if !ok {
		return 0
	}
	return slices.Min(slices.Collect(maps.Keys(e.versions)))
}

// ProcessorDef returns the processor name as the engine runs it with the code of its
// version v: a cluster from cluster version 3 on runs only its active processors, each at
// its active version.
func (r *Registry) ProcessorDef(name string, v uint32) (partition.Processor, bool) {
	e, ok := r.processors[name]
	if !ok {
		return partition.Processor{}, false
	}
	c, ok := e.versions[v]
	if !ok {
		return partition.Processor{}, false
	}
	p := e.partition()
	p.Process, p.OnTick = c.Process, c.OnTick
	return p, true
}
