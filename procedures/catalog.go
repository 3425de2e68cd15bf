package procedures

import "github.com/lockstepdb/lockstep/procedures/schema"

// Catalog describes every registered procedure, ordered by name: its flags, its doc line
// and the msgpack encoding of its argument and result types (schema.Of). A node serves it
// to clients (OpProcedures), so that programs without the Go types can call any procedure.
// Each name appears once, at the version Lookup gives it.
// OriginBinary is the origin of code compiled into the binary (schema.Procedure.Origin).
const OriginBinary = "binary"

func (r *Registry) Catalog() []schema.Procedure {
	return r.CatalogAt(func(name string) (uint32, bool) {
		info, ok := r.Lookup(name)
		return info.Version, ok
	})
}

// CatalogAt is Catalog with each name at the version at(name) gives; a name at returns
// false for, or at a version this binary does not carry, is left out (a cluster's active
// registrations, docs/procedures.md, Deploying and upgrading).
func (r *Registry) CatalogAt(at func(name string) (uint32, bool)) []schema.Procedure {
	var out []schema.Procedure
	for _, info := range r.List() {
		if v, ok := at(info.Name); !ok || v != info.Version {
			continue
		}
		out = append(out, schema.Procedure{Name: info.Name, Doc: info.Doc, ReadOnly: info.ReadOnly, Multi: info.Multi,
			Args: schema.Of(info.Args), Result: schema.Of(info.Result), Version: info.Version, Origin: OriginBinary})
	}
	return out
}
