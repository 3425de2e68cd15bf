package main

import (
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/internal/invoke"
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

func runInvoke(c *cli.Context) error {
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	if c.NArg() != 1 {
		return errors.New("invoke needs exactly one PROCEDURE name; \"lockstep procedures\" lists them")
	}
	name := c.Args().First()
	var call invoke.Call
	proc, known := invoke.Builtin(name)
	if known { // everything is checked before anything is sent
		if err := parseCall(c, proc, &call); err != nil {
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
		if proc, err = invoke.Lookup(ctx, cl, name, c.StringSlice("addr")); err != nil {
			return err
		}
		if err := parseCall(c, proc, &call); err != nil {
			return err
		}
	}
	v, err := call.Run(ctx, cl)
	if err != nil {
		return err
	}
	if format == outputJSON {
		return writeJSON(c.App.Writer, v)
	}
	return cliout.Dynamic(c.App.Writer, v)
}

// parseCall checks the key flags, the consistency level and the JSON arguments against
// the procedure p, into call.
func parseCall(c *cli.Context, p client.Procedure, call *invoke.Call) error {
	call.Proc = p
	name := p.Name
	switch cons := c.String("consistency"); cons {
	case "linearizable":
		call.Cons = client.ReadLinearizable
	case "any":
		if !p.ReadOnly {
			return fmt.Errorf("%s writes, so it runs linearizable only; --consistency any is for read-only procedures", name)
		}
		call.Cons = client.ReadAny
	default:
		return fmt.Errorf("--consistency %q: want linearizable or any", cons)
	}
	key, keys := c.String("key"), c.StringSlice("keys")
	if p.Multi {
		if c.IsSet("key") {
			return fmt.Errorf("%s is multi-partition: it takes --keys, not --key", name)
		}
		for _, k := range keys {
			call.Keys = append(call.Keys, []byte(k))
		}
	} else {
		if len(keys) > 0 {
			return fmt.Errorf("%s is single-partition: it takes --key, not --keys", name)
		}
		if key == "" {
			return fmt.Errorf("%s is single-partition: give its partition key with --key", name)
		}
		call.Key = []byte(key)
	}
	var err error
	if call.Args, err = invoke.EncodeArgs(&p.Args, c.String("args")); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
