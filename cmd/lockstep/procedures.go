package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/urfave/cli/v2"
)

func proceduresCommand() *cli.Command {
	return &cli.Command{
		Name:  "procedures",
		Usage: "list the procedures: arguments, result, partitioning, read-only flag",
		Description: `Lists procedures with the JSON shape of their arguments as "lockstep invoke --args"
takes them, their result type, whether they run on one partition (with --key) or several
(a barrier, optionally scoped by --keys), and whether they are read-only.

Without --addr it lists the procedures this binary's "lockstep node" runs (the
built-ins) and needs no running node. With --addr it lists those the cluster runs, as a
node describes them: custom procedures of a program that embeds Lockstep included,
which "lockstep invoke" can call too.

Example:
  lockstep procedures
  lockstep procedures --output json
  lockstep procedures --addr 127.0.0.1:7401`,
		Flags:  withClientFlags(outputFlag(outputTable)),
		Action: runProcedures,
	}
}

// procedureJSON is one row of `lockstep procedures --output json`.
type procedureJSON struct {
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

func runProcedures(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	list := builtinCatalog()
	if c.IsSet("addr") {
		if list, err = clusterCatalog(c); err != nil {
			return err
		}
	}
	var rows []procedureJSON
	for _, p := range list {
		example, err := json.Marshal(p.Args.ZeroJSON())
		if err != nil {
			example = []byte("null")
		}
		rows = append(rows, procedureJSON{
			Name: p.Name, Args: p.Args.Shape(), ArgsExample: example, Result: p.Result.Shape(),
			Partitioning: partitioning(p.Multi), ReadOnly: p.ReadOnly, Doc: p.Doc, Version: p.Version, Origin: p.Origin,
		})
	}
	out := c.App.Writer
	if format == outputJSON {
		return writeJSON(out, rows)
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "NAME\tVERSION\tORIGIN\tPARTITIONING\tREAD-ONLY\tARGS\tRESULT\tDOC")
	for _, r := range rows {
		ro := "no"
		if r.ReadOnly {
			ro = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Version, dash(r.Origin), r.Partitioning, ro, r.Args, r.Result, r.Doc)
	}
	return tw.Flush()
}

// builtinCatalog describes the procedures of this binary's nodes, as a node would.
func builtinCatalog() []client.Procedure {
	cat := procedures.Builtins().Catalog()
	out := make([]client.Procedure, len(cat))
	for i, p := range cat {
		out[i] = client.Procedure{Name: p.Name, Doc: p.Doc, ReadOnly: p.ReadOnly, Multi: p.Multi, Args: p.Args, Result: p.Result,
			Version: p.Version, Origin: p.Origin}
	}
	return out
}

// clusterCatalog asks the cluster at --addr for its procedures.
func clusterCatalog(c *cli.Context) ([]client.Procedure, error) {
	ctx, cl, done, err := adminCommand(c)
	if err != nil {
		return nil, err
	}
	defer done()
	list, err := cl.Procedures().Catalog(ctx)
	if err != nil {
		return nil, fmt.Errorf("procedures of the cluster at %s: %w", strings.Join(c.StringSlice("addr"), ","), err)
	}
	return list, nil
}

// partitioning names how a procedure is scheduled: on the partition of its key, or as a
// multi-partition barrier.
func partitioning(multi bool) string {
	if multi {
		return "multi"
	}
	return "single"
}
