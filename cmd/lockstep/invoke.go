package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/urfave/cli/v2"
)

func invokeCommand() *cli.Command {
	return &cli.Command{
		Name:      "invoke",
		Usage:     "run a procedure: arguments as JSON in, result as JSON out",
		ArgsUsage: "PROCEDURE",
		Description: `Runs any registered procedure exactly once (through a client session) and prints its
result. --args is JSON for the procedure's argument type ("lockstep procedures" shows
it): fields by their Go names, as in {"Delta": 5}, or by their wire names, as in
{"d": 5}; []byte fields are base64 strings; unknown fields are an error. A procedure
with no arguments needs no --args. A single-partition procedure needs --key; a
multi-partition one runs on every partition, or on those of --keys.
--consistency any runs a read-only procedure on one replica's current state.

A procedure this binary does not have (a custom one of a program that embeds Lockstep)
is looked up in the cluster's catalogue ("lockstep procedures --addr" lists it). Either
way --args are encoded by the procedure's argument schema, by the rules above, and the
result is printed as JSON decoded by the result schema.

Examples:
  lockstep invoke counter.add --key visits --args '{"Delta": 1}'
  lockstep invoke counter.get --key visits --consistency any
  lockstep invoke voter.init --args '{"Contestants": ["Alice", "Bob"]}'
  lockstep invoke voter.vote --key 2025550123 --args '{"Contestant": 2}'
  lockstep invoke voter.results --output table
  lockstep invoke bank.transfer --keys alice,bob --args '{"From": "alice", "To": "bob", "Amount": 5}'`,
		Flags: withClientFlags(
			&cli.StringFlag{Name: "key", Aliases: []string{"k"}, Usage: "partition key of a single-partition procedure"},
			&cli.StringSliceFlag{Name: "keys", Usage: "keys K1,K2,... whose partitions a multi-partition procedure runs on (default: all)"},
			&cli.StringFlag{Name: "args", Usage: "the arguments as JSON"},
			&cli.StringFlag{Name: "consistency", Usage: "linearizable, or any (read-only procedures: one replica's state, maybe stale)", Value: "linearizable"},
			outputFlag(outputJSON),
		),
		Action: runInvoke,
	}
}

// errUnknownProcedure: neither this binary nor the cluster has a procedure of that name.
var errUnknownProcedure = errors.New("unknown procedure")

// invocation is what `lockstep invoke` was asked to run, checked against the procedure's
// description.
type invocation struct {
	// proc describes the procedure: the binary's own registration of a built-in, or the
	// cluster's catalogue entry; its schemas encode the arguments and decode the result.
	proc client.Procedure
	key  []byte
	keys [][]byte
	// args is the msgpack encoding (msgpack.RawMessage) the argument schema built; nil
	// for none.
	args any
	cons client.Consistency
}

func runInvoke(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	if c.NArg() != 1 {
		return errors.New("invoke needs exactly one PROCEDURE name; \"lockstep procedures\" lists them")
	}
	name := c.Args().First()
	var inv invocation
	info, known := procedures.Builtins().Lookup(name)
	if known {
		// Everything is checked before anything is sent.
		inv.proc = client.Procedure{Name: info.Name, ReadOnly: info.ReadOnly, Multi: info.Multi,
			Args: schema.Of(info.Args), Result: schema.Of(info.Result)}
		if err := inv.parse(c); err != nil {
			return err
		}
	}
	ctx, cancel, err := commandContext(c)
	if err != nil {
		return err
	}
	defer cancel()
	cl, err := dialClient(ctx, c)
	if err != nil {
		return err
	}
	defer cl.Close()
	if !known {
		if inv.proc, err = clusterProcedure(ctx, c, cl, name); err != nil {
			return err
		}
		if err := inv.parse(c); err != nil {
			return err
		}
	}
	return inv.run(ctx, c, cl, format)
}

// call runs the invocation with cl and decodes its result into result.
func (inv *invocation) call(ctx context.Context, cl *client.Client, result any) error {
	var err error
	name := inv.proc.Name
	switch {
	case !inv.proc.ReadOnly && inv.proc.Multi: // writes run in the session, exactly once
		err = cl.InvokeMulti(ctx, name, inv.keys, inv.args, result)
	case !inv.proc.ReadOnly:
		err = cl.Invoke(ctx, name, inv.key, inv.args, result)
	case inv.proc.Multi:
		err = cl.QueryMulti(ctx, name, inv.keys, inv.args, result, inv.cons)
	default:
		err = cl.Query(ctx, name, inv.key, inv.args, result, inv.cons)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// clusterProcedure looks name up in the catalogue of the cluster cl talks to.
func clusterProcedure(ctx context.Context, c *cli.Context, cl *client.Client, name string) (client.Procedure, error) {
	addrs := strings.Join(c.StringSlice("addr"), ",")
	list, err := cl.Procedures().Catalog(ctx)
	if err != nil {
		return client.Procedure{}, fmt.Errorf("%q is not a built-in, and the procedures of the cluster at %s: %w", name, addrs, err)
	}
	for _, p := range list {
		if p.Name == name {
			return p, nil
		}
	}
	return client.Procedure{}, fmt.Errorf("%w %q: not a built-in, and the cluster at %s does not run it; \"lockstep procedures --addr %s\" lists the cluster's",
		errUnknownProcedure, name, addrs, addrs)
}

// parse checks the key flags, the consistency level and the JSON arguments against the
// procedure.
func (inv *invocation) parse(c *cli.Context) error {
	name := inv.proc.Name
	switch cons := c.String("consistency"); cons {
	case "linearizable":
		inv.cons = client.ReadLinearizable
	case "any":
		if !inv.proc.ReadOnly {
			return fmt.Errorf("%s writes, so it runs linearizable only; --consistency any is for read-only procedures", name)
		}
		inv.cons = client.ReadAny
	default:
		return fmt.Errorf("--consistency %q: want linearizable or any", cons)
	}
	key, keys := c.String("key"), c.StringSlice("keys")
	if inv.proc.Multi {
		if c.IsSet("key") {
			return fmt.Errorf("%s is multi-partition: it takes --keys, not --key", name)
		}
		for _, k := range keys {
			inv.keys = append(inv.keys, []byte(k))
		}
	} else {
		if len(keys) > 0 {
			return fmt.Errorf("%s is single-partition: it takes --key, not --keys", name)
		}
		if key == "" {
			return fmt.Errorf("%s is single-partition: give its partition key with --key", name)
		}
		inv.key = []byte(key)
	}
	var err error
	if inv.args, err = encodeArgs(&inv.proc.Args, c.String("args")); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
