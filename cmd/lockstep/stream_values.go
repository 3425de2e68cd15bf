package main

import (
	"strings"

	"github.com/lockstepdb/lockstep/internal/recordjson"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/urfave/cli/v2"
)

// Record values as JSON (internal/recordjson). stream append, read and tail know the value
// types of the built-ins' streams (procedures.StreamValueTypes: the click pipeline's clicks
// and window results, dead letters) and convert them between JSON and their msgpack
// encoding, so the CLI can feed and read the built-in pipeline. --value-type chooses: auto
// (the default: by the stream's name), raw (bytes as they are), or a type's name (for a
// copy of the pipeline under another prefix).

// valueTypeFlag is --value-type.
func valueTypeFlag() cli.Flag {
	return &cli.StringFlag{Name: "value-type", Value: recordjson.ValueTypeAuto,
		Usage: "how record values are shown and given: auto (by the stream's name), raw (bytes), or " +
			strings.Join(procedures.StreamValueTypeNames(), ", ") + " (JSON of that type)"}
}

// streamValueType resolves --value-type for stream: nil means raw bytes.
func streamValueType(c *cli.Context, stream string) (*schema.Type, error) {
	return recordjson.ValueType(c.String("value-type"), stream)
}
