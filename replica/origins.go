package replica

import (
	"fmt"
	"slices"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/schema"
)

// Where running code comes from, for `lockstep procedures` and `lockstep processors`:
// compiled into the binary at a registration's version, or a deployed module's version.

// moduleOrigin is the origin text of a module's code.
func moduleOrigin(name string, v uint32) string { return fmt.Sprintf("module %s v%d", name, v) }

// ModuleCatalog describes the active modules' procedures, by name, as the catalogue does
// (their arguments and results are any msgpack value). Safe for concurrent use.
func (f *FSM) ModuleCatalog() []schema.Procedure {
	if f.depView.Load().Version < VersionModules {
		return nil
	}
	tab := f.modView.Load()
	var out []schema.Procedure
	for _, name := range sortedKeys(tab.procs) {
		p := tab.procs[name]
		out = append(out, schema.Procedure{Name: name, Doc: p.info.Doc, ReadOnly: p.info.ReadOnly, Multi: p.info.Multi,
			Args: schema.Of(p.info.Args), Result: schema.Of(p.info.Result), Version: p.version, Origin: moduleOrigin(p.module, p.version)})
	}
	return out
}

// ProcessorOrigin returns the running version of the processor name and where its code
// comes from ("binary" or "module NAME vN"). Safe for concurrent use.
func (f *FSM) ProcessorOrigin(name string) (uint32, string) {
	d := f.depView.Load()
	if d.Version >= VersionModules {
		tab := f.modView.Load()
		for _, m := range d.Modules {
			if reg := tab.regs[m.Name]; reg != nil {
				if _, ok := reg.ProcessorDef(name, 1); ok {
					v := m.Current().Version
					return v, moduleOrigin(m.Name, v)
				}
			}
		}
	}
	if g, ok := d.find(name, true); ok && d.Version >= VersionActiveRegistrations {
		return g.Version, procedures.OriginBinary
	}
	return f.reg.DefaultProcessorVersion(name), procedures.OriginBinary
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
