package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/urfave/cli/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// Every procedure is called through its schemas (the binary's own for a built-in, the
// cluster catalogue's for a custom one): the JSON arguments are encoded by the argument
// schema, the result is decoded by the result schema.

// encodeArgs encodes the JSON text by the argument schema t; empty text gives nil (no
// arguments: the procedure gets its type's zero value).
func encodeArgs(t *schema.Type, text string) (any, error) {
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

// run runs the invocation and prints its result, decoded by the result schema.
func (inv *invocation) run(ctx context.Context, c *cli.Context, cl *client.Client, format string) error {
	var raw msgpack.RawMessage
	if err := inv.call(ctx, cl, &raw); err != nil {
		return err
	}
	var v any
	if len(raw) > 0 {
		var err error
		if v, err = schema.DecodeJSON(&inv.proc.Result, raw); err != nil {
			return fmt.Errorf("%s: result: %w", inv.proc.Name, err)
		}
	}
	if format == outputJSON {
		return writeJSON(c.App.Writer, v)
	}
	return cliout.Dynamic(c.App.Writer, v)
}
