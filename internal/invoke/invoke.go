package invoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/vmihailenco/msgpack/v5"
)

// ErrUnknownProcedure: neither this binary nor the cluster has a procedure of that name.
var ErrUnknownProcedure = errors.New("unknown procedure")

// Builtins describes the procedures of this binary's nodes (procedures.Builtins), as a
// node's catalogue would.
func Builtins() []client.Procedure {
	cat := procedures.Builtins().Catalog()
	out := make([]client.Procedure, len(cat))
	for i, p := range cat {
		out[i] = client.Procedure{Name: p.Name, Doc: p.Doc, ReadOnly: p.ReadOnly, Multi: p.Multi, Args: p.Args, Result: p.Result,
			Version: p.Version, Origin: p.Origin}
	}
	return out
}

// Builtin returns the description of the built-in procedure name, if there is one.
func Builtin(name string) (client.Procedure, bool) {
	for _, p := range Builtins() {
		if p.Name == name {
			return p, true
		}
	}
	return client.Procedure{}, false
}

// Lookup finds name in the catalogue of the cluster cl talks to; addrs names the cluster
// in the errors.
func Lookup(ctx context.Context, cl *client.Client, name string, addrs []string) (client.Procedure, error) {
	at := strings.Join(addrs, ",")
	list, err := cl.Procedures().Catalog(ctx)
	if err != nil {
		return client.Procedure{}, fmt.Errorf("%q is not a built-in, and the procedures of the cluster at %s: %w", name, at, err)
	}
	for _, p := range list {
		if p.Name == name {
			return p, nil
		}
	}
	return client.Procedure{}, fmt.Errorf("%w %q: not a built-in, and the cluster at %s does not run it; \"lockstep procedures --addr %s\" lists the cluster's",
		ErrUnknownProcedure, name, at, at)
}

// EncodeArgs encodes the JSON text by the argument schema t into a msgpack.RawMessage;
// empty text gives nil (no arguments: the procedure gets its type's zero value).
func EncodeArgs(t *schema.Type, text string) (any, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	if !json.Valid([]byte(text)) {
		var v any
		err := json.Unmarshal([]byte(text), &v)
		if err == nil {
			err = errors.New("more follows the first value")
		}
		return nil, fmt.Errorf("--args is not valid JSON: %v", err)
	}
	b, err := schema.EncodeJSON(t, []byte(text))
	if err != nil {
		return nil, fmt.Errorf("--args: %w", err)
	}
	return msgpack.RawMessage(b), nil
}

// Call is one call of a procedure, checked against its description.
type Call struct {
	// Proc describes the procedure; its schemas decode the result.
	Proc client.Procedure
	// Key is a single-partition procedure's partition key, Keys the keys whose partitions
	// a multi-partition one runs on (none: all).
	Key  []byte
	Keys [][]byte
	// Args is the encoding EncodeArgs made; nil for none.
	Args any
	// Cons is a read-only procedure's consistency.
	Cons client.Consistency
}

// Run runs the call with cl and returns its result decoded by the result schema (nil
// for none): a write runs in cl's session, exactly once.
func (c *Call) Run(ctx context.Context, cl *client.Client) (any, error) {
	var raw msgpack.RawMessage
	var err error
	name := c.Proc.Name
	switch {
	case !c.Proc.ReadOnly && c.Proc.Multi:
		err = cl.InvokeMulti(ctx, name, c.Keys, c.Args, &raw)
	case !c.Proc.ReadOnly:
		err = cl.Invoke(ctx, name, c.Key, c.Args, &raw)
	case c.Proc.Multi:
		err = cl.QueryMulti(ctx, name, c.Keys, c.Args, &raw, c.Cons)
	default:
		err = cl.Query(ctx, name, c.Key, c.Args, &raw, c.Cons)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	v, err := schema.DecodeJSON(&c.Proc.Result, raw)
	if err != nil {
		return nil, fmt.Errorf("%s: result: %w", name, err)
	}
	return v, nil
}
