package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/urfave/cli/v2"
)

// Record values as JSON. stream append, read and tail know the value types of the
// built-ins' streams (procedures.StreamValueTypes: the click pipeline's clicks and window
// results, dead letters) and convert them between JSON and their msgpack encoding with
// procedures/schema, so the CLI can feed and read the built-in pipeline. --value-type
// chooses: auto (the default: by the stream's name, procedures.DefaultStreamValueType),
// raw (bytes as they are), or a type's name (for a copy of the pipeline under another
// prefix).

const (
	valueTypeAuto = "auto"
	valueTypeRaw  = "raw"
)

// valueTypeFlag is --value-type.
func valueTypeFlag() cli.Flag {
	return &cli.StringFlag{Name: "value-type", Value: valueTypeAuto,
		Usage: "how record values are shown and given: auto (by the stream's name), raw (bytes), or " +
			strings.Join(procedures.StreamValueTypeNames(), ", ") + " (JSON of that type)"}
}

// streamValueType resolves --value-type for stream: nil means raw bytes.
func streamValueType(c *cli.Context, stream string) (*schema.Type, error) {
	name := c.String("value-type")
	switch name {
	case valueTypeRaw:
		return nil, nil
	case valueTypeAuto:
		if name = procedures.DefaultStreamValueType(stream); name == "" {
			return nil, nil
		}
	}
	rt, ok := procedures.StreamValueTypes()[name]
	if !ok {
		return nil, fmt.Errorf("--value-type %q: want %s, %s or one of %s", name, valueTypeAuto, valueTypeRaw,
			strings.Join(procedures.StreamValueTypeNames(), ", "))
	}
	t := schema.Of(rt)
	return &t, nil
}

// decodeValue returns data as a JSON-printable value of vt, or an error if it is not one.
func decodeValue(vt *schema.Type, data []byte) (any, error) {
	v, err := schema.DecodeJSON(vt, data)
	if err != nil {
		return nil, fmt.Errorf("value is not a %s: %w", vt.Name, err)
	}
	return v, nil
}

// valueCell renders a record's value for a table: compact JSON of vt if it decodes as
// one, else the bytes (bytesText).
func valueCell(vt *schema.Type, data []byte) string {
	if vt != nil {
		if v, err := decodeValue(vt, data); err == nil {
			if b, err := json.Marshal(v); err == nil {
				return string(b)
			}
		}
	}
	return bytesText(data)
}

// encodeValue turns text into a record value: the msgpack encoding of the JSON text as a
// vt, or the text's bytes when vt is nil.
func encodeValue(vt *schema.Type, text []byte) ([]byte, error) {
	if vt == nil {
		return append([]byte(nil), text...), nil
	}
	v, err := schema.EncodeJSON(vt, text)
	if err != nil {
		return nil, fmt.Errorf("value %s: not a %s: %w", text, vt.Name, err)
	}
	return v, nil
}
