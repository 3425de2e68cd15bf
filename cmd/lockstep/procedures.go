package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/urfave/cli/v2"
)

func proceduresCommand() *cli.Command {
	return &cli.Command{
		Name:  "procedures",
		Usage: "list the registered procedures: arguments, result, partitioning, read-only flag",
		Description: `Lists the procedures that "lockstep node" runs (the built-ins), with the JSON shape
of their arguments as "lockstep invoke --args" takes them, their result type, whether
they run on one partition (with --key) or several (a barrier, optionally scoped by
--keys), and whether they are read-only. Needs no running node.

Example:
  lockstep procedures
  lockstep procedures --output json`,
		Flags:  []cli.Flag{outputFlag(outputTable)},
		Action: runProcedures,
	}
}

// procedureJSON is one row of `lockstep procedures --output json`.
type procedureJSON struct {
	// Name is the name the procedure is invoked by.
	Name string `json:"name"`
	// Args describes the argument type (typeShape); ArgsExample is its zero value as JSON,
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
}

func runProcedures(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	var rows []procedureJSON
	for _, info := range procedures.Builtins().List() {
		example, err := json.Marshal(reflect.Zero(info.Args).Interface())
		if err != nil {
			example = []byte("null")
		}
		rows = append(rows, procedureJSON{
			Name: info.Name, Args: typeShape(info.Args), ArgsExample: example, Result: typeShape(info.Result),
			Partitioning: partitioning(info), ReadOnly: info.ReadOnly, Doc: info.Doc,
		})
	}
	out := c.App.Writer
	if format == outputJSON {
		return writeJSON(out, rows)
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "NAME\tPARTITIONING\tREAD-ONLY\tARGS\tRESULT\tDOC")
	for _, r := range rows {
		ro := "no"
		if r.ReadOnly {
			ro = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Partitioning, ro, r.Args, r.Result, r.Doc)
	}
	return tw.Flush()
}

// partitioning names how a procedure is scheduled: on the partition of its key, or as a
// multi-partition barrier.
func partitioning(info procedures.Info) string {
	if info.Multi {
		return "multi"
	}
	return "single"
}

// typeShape describes a procedure's argument or result type as its JSON form is built:
// "none" for an empty struct, "Name{Field type, ...}" for a struct, "[]Elem{...}" for a
// slice of structs, "Name (int)" for a named basic type.
func typeShape(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return typeShape(t.Elem())
	case reflect.Struct:
		var fields []string
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				fields = append(fields, f.Name+" "+fieldType(f.Type))
			}
		}
		if len(fields) == 0 {
			return "none"
		}
		return t.Name() + "{" + strings.Join(fields, ", ") + "}"
	case reflect.Slice:
		if isBytes(t) {
			return "[]byte"
		}
		return "[]" + typeShape(t.Elem())
	}
	if t.Name() != "" && t.Name() != t.Kind().String() {
		return t.Name() + " (" + t.Kind().String() + ")"
	}
	return t.String()
}

// fieldType names a struct field's type briefly: []byte fields are base64 strings in JSON.
func fieldType(t reflect.Type) string {
	if isBytes(t) {
		return "[]byte (base64)"
	}
	if t.Kind() == reflect.Struct || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct) {
		return typeShape(t)
	}
	return t.String()
}
