package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/urfave/cli/v2"
)

// The data verbs put, get and del: the kv.* built-ins (procedures/kv.go) from the command
// line, as etcdctl's put/get/del. Values are bytes; --json makes put refuse a VALUE that
// is not JSON, and get --output json shows a value that is JSON as JSON.

// maxStdinValue bounds a value read from stdin; the node refuses a larger one anyway
// (ErrTooLarge), but reading it all first would cost the memory.
const maxStdinValue = 16 << 20

// errKeyNotFound: get named a key that holds no value (exit code exitNotFound).
var errKeyNotFound = errors.New("not found")

func putCommand() *cli.Command {
	return &cli.Command{
		Name:      "put",
		Usage:     "store a value under a key (kv.put)",
		ArgsUsage: "KEY [VALUE]",
		Description: `Stores VALUE (or, without VALUE, stdin) under KEY in the kv table, exactly once through a
client session, and prints whether the key was new. --json refuses a VALUE that is not
JSON before anything is sent.

Examples:
  lockstep put greeting hello
  lockstep put user/7 '{"name": "Ada", "age": 36}' --json
  lockstep put blob < file.bin`,
		Flags: withClientFlags(
			&cli.BoolFlag{Name: "json", Usage: "the value must be JSON"},
			outputFlag(outputTable),
		),
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 || c.Args().First() == "" {
				return errors.New("put needs a non-empty KEY and a VALUE (or the value on stdin)")
			}
			key := c.Args().First()
			var value []byte
			if c.NArg() == 2 {
				value = []byte(c.Args().Get(1))
			} else {
				b, err := io.ReadAll(io.LimitReader(c.App.Reader, maxStdinValue+1))
				if err != nil {
					return fmt.Errorf("stdin: %w", err)
				}
				if len(b) > maxStdinValue {
					return fmt.Errorf("stdin: a value of more than %d bytes", maxStdinValue)
				}
				value = b
			}
			if c.Bool("json") && !json.Valid(value) {
				return fmt.Errorf("put %s --json: the value is not JSON", key)
			}
			return withSession(c, func(cl *client.Client) (any, error) {
				created, err := cl.KVPut(c.Context, []byte(key), value)
				if err != nil {
					return nil, fmt.Errorf("put %s: %w", key, err)
				}
				if outputTable == c.String("output") {
					return cliout.Text(map[bool]string{true: "created", false: "updated"}[created]), nil
				}
				return cliout.KVJSON{Key: key, Created: &created}, nil
			})
		},
	}
}

func getCommand() *cli.Command {
	return &cli.Command{
		Name:      "get",
		Usage:     "print the value stored under a key (kv.get)",
		ArgsUsage: "KEY",
		Description: `Prints the value stored under KEY in the kv table: a linearizable read the leader
answers off the log, or, with --consistency any, one replica's current state. A key
without a value is an error (exit code 7, not-found). --output json prints key, data
(base64), text (when UTF-8) and value (when the value is JSON).

Examples:
  lockstep get greeting
  lockstep get user/7 -o json`,
		Flags: withClientFlags(
			&cli.StringFlag{Name: "consistency", Usage: "linearizable, or any (one replica's state, maybe stale)", Value: "linearizable"},
			outputFlag(outputTable),
		),
		Action: func(c *cli.Context) error {
			key, err := oneKey(c, "get")
			if err != nil {
				return err
			}
			var cons client.Consistency
			switch s := c.String("consistency"); s {
			case "linearizable":
				cons = client.ReadLinearizable
			case "any":
				cons = client.ReadAny
			default:
				return fmt.Errorf("--consistency %q: want linearizable or any", s)
			}
			return withSession(c, func(cl *client.Client) (any, error) {
				res, err := client.QueryAs[builtin.KVGetResult](c.Context, cl, builtin.KVGet, []byte(key), builtin.NoArgs{}, cons)
				if err != nil {
					return nil, fmt.Errorf("get %s: %w", key, err)
				}
				if !res.Found {
					return nil, fmt.Errorf("key %q: %w", key, errKeyNotFound)
				}
				if c.String("output") == outputTable {
					return cliout.Text(cliout.BytesText(res.Value)), nil
				}
				return cliout.KVValue(key, res.Value), nil
			})
		},
	}
}

func delCommand() *cli.Command {
	return &cli.Command{
		Name:      "del",
		Usage:     "delete the value stored under a key (kv.delete)",
		ArgsUsage: "KEY",
		Description: `Removes KEY from the kv table, exactly once through a client session, and prints whether
it held a value. Deleting a key without a value is not an error.

Example:
  lockstep del greeting`,
		Flags: withClientFlags(outputFlag(outputTable)),
		Action: func(c *cli.Context) error {
			key, err := oneKey(c, "del")
			if err != nil {
				return err
			}
			return withSession(c, func(cl *client.Client) (any, error) {
				existed, err := cl.KVDelete(c.Context, []byte(key))
				if err != nil {
					return nil, fmt.Errorf("del %s: %w", key, err)
				}
				if c.String("output") == outputTable {
					return cliout.Text(map[bool]string{true: "deleted", false: "not found: nothing deleted"}[existed]), nil
				}
				return cliout.KVJSON{Key: key, Existed: &existed}, nil
			})
		},
	}
}

func oneKey(c *cli.Context, cmd string) (string, error) {
	if c.NArg() != 1 || c.Args().First() == "" {
		return "", fmt.Errorf("%s needs exactly one non-empty KEY", cmd)
	}
	return c.Args().First(), nil
}
