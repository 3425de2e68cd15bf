package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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
is looked up in the cluster's catalogue ("lockstep procedures --addr" lists it): its
--args are encoded by the argument schema the nodes describe, by the same rules, and its
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
	proc client.Procedure
	// typed is the binary's own registration of the procedure; nil for a procedure only
	// the cluster knows, whose arguments and result go through its schemas.
	typed *procedures.Info
	key   []byte
	keys  [][]byte
	// args is a pointer to a value of typed.Args, or, without typed, the msgpack encoding
	// (msgpack.RawMessage) the schema built; nil for none.
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
		inv.typed = &info
		inv.proc = client.Procedure{Name: info.Name, ReadOnly: info.ReadOnly, Multi: info.Multi}
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
	if inv.typed == nil {
		return inv.runDynamic(ctx, c, cl, format)
	}
	result := reflect.New(info.Result)
	if err := inv.call(ctx, cl, result.Interface()); err != nil {
		return err
	}
	if format == outputJSON {
		return writeJSON(c.App.Writer, result.Interface())
	}
	return writeValueTable(c.App.Writer, result)
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
	list, err := cl.ProceduresCatalog(ctx)
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
	if inv.typed != nil {
		inv.args, err = decodeArgs(inv.typed.Args, c.String("args"))
	} else {
		inv.args, err = encodeArgs(&inv.proc.Args, c.String("args"))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// decodeArgs decodes the JSON text into a new value of type t, refusing unknown fields,
// and returns a pointer to it; empty text gives nil (no arguments: the procedure gets
// t's zero value).
func decodeArgs(t reflect.Type, text string) (any, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	if !json.Valid([]byte(text)) {
		var v any
		err := json.Unmarshal([]byte(text), &v)
		return nil, fmt.Errorf("--args is not valid JSON: %v", err)
	}
	raw := aliasKeys(json.RawMessage(text), t)
	v := reflect.New(t)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v.Interface()); err != nil {
		shape := schema.Of(t)
		return nil, fmt.Errorf("--args does not fit the arguments %s: %v", typeShape(&shape), err)
	}
	return v.Interface(), nil
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// aliasKeys rewrites the keys of the JSON objects in raw that decode into structs: a key
// that is a field's msgpack name, and names no field the JSON way, becomes the field's Go
// name. So --args takes both {"Delta": 1} and the wire's {"d": 1}. What it cannot
// follow it leaves as it is, for the typed decoder to judge.
func aliasKeys(raw json.RawMessage, t reflect.Type) json.RawMessage {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return raw
	}
	var out any
	switch {
	case t.Kind() == reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			return raw
		}
		m := make(map[string]json.RawMessage, len(obj))
		for k, v := range obj {
			f, ok := jsonField(t, k)
			if !ok {
				if f, ok = msgpackField(t, k); ok {
					k = f.Name
				}
			}
			if ok {
				v = aliasKeys(v, f.Type)
			}
			m[k] = v
		}
		out = m
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && !isBytes(t):
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil || list == nil {
			return raw
		}
		for i := range list {
			list[i] = aliasKeys(list[i], t.Elem())
		}
		out = list
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			return raw
		}
		for k, v := range obj {
			obj[k] = aliasKeys(v, t.Elem())
		}
		out = obj
	default:
		return raw
	}
	b, err := json.Marshal(out)
	if err != nil {
		return raw
	}
	return b
}

// jsonField returns the exported field of t that encoding/json decodes key into.
func jsonField(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if f.IsExported() && name != "-" && strings.EqualFold(name, key) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// msgpackField returns the exported field of t whose msgpack name is key.
func msgpackField(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("msgpack"), ",")
		if f.IsExported() && name != "" && name != "-" && name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
