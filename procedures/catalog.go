package procedures

import "github.com/lockstepdb/lockstep/procedures/schema"

// Catalog describes every registered procedure, ordered by name: its flags, its doc line
// and the msgpack encoding of its argument and result types (schema.Of). A node serves it
// to clients (OpProcedures), so that programs without the Go types can call any procedure.
func (r *Registry) Catalog() []schema.Procedure {
	list := r.List()
	out := make([]schema.Procedure, len(list))
	for i, info := range list {
		out[i] = schema.Procedure{Name: info.Name, Doc: info.Doc, ReadOnly: info.ReadOnly, Multi: info.Multi,
			Args: schema.Of(info.Args), Result: schema.Of(info.Result)}
	}
	return out
}
