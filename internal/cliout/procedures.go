package cliout

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/lockstepdb/lockstep/client"
)

// ProcedureJSON is one row of `lockstep procedures --output json`.
type ProcedureJSON struct {
	// Name is the name the procedure is invoked by.
	Name string `json:"name"`
	// Args describes the argument type (schema.Type.Shape); ArgsExample is its zero value as JSON,
	// a skeleton for --args.
	Args        string          `json:"args"`
	ArgsExample json.RawMessage `json:"args_example"`
	// Result describes the result type.
	Result string `json:"result"`
	// Partitioning is "single" (runs on its key's partition) or "multi" (a barrier).
	Partitioning string `json:"partitioning"`
	// ReadOnly procedures never write.
	ReadOnly bool `json:"read_only"`
	// Doc is the registry's one-line description.
	Doc string `json:"doc"`
	// Version is the running version; Origin where its code comes from: "binary" or
	// "module NAME vN" (lockstep deploy).
	Version uint32 `json:"version,omitempty"`
	Origin  string `json:"origin,omitempty"`
}

// Procedures prints procedure descriptions: their arguments' shape and skeleton, result,
// partitioning, read-only flag, version, origin and doc.
func Procedures(w io.Writer, format string, list []client.Procedure) error {
	var rows []ProcedureJSON
	for _, p := range list {
		example, err := json.Marshal(p.Args.ZeroJSON())
		if err != nil {
			example = []byte("null")
		}
		part := "single"
		if p.Multi {
			part = "multi"
		}
		rows = append(rows, ProcedureJSON{
			Name: p.Name, Args: p.Args.Shape(), ArgsExample: example, Result: p.Result.Shape(),
			Partitioning: part, ReadOnly: p.ReadOnly, Doc: p.Doc, Version: p.Version, Origin: p.Origin,
		})
	}
	if format == JSON {
		return WriteJSON(w, rows)
	}
	tw := NewTable(w)
	fmt.Fprintln(tw, "NAME\tVERSION\tORIGIN\tPARTITIONING\tREAD-ONLY\tARGS\tRESULT\tDOC")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Version, Dash(r.Origin), r.Partitioning, YesNo(r.ReadOnly), r.Args, r.Result, r.Doc)
	}
	return tw.Flush()
}
