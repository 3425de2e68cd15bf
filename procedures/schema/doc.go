/*
Package schema describes the msgpack encoding of a procedure's argument and result types
as plain data, so that a program that does not have the Go types — the lockstep CLI
talking to a cluster that runs custom procedures — can still build arguments and read
results.

A Type is a small recursive shape: bool, int and uint of a width, float, string, bytes,
slice, array, map, struct (its fields in order, each with the msgpack key it is encoded
under and its Go name), nullable (a Go pointer), any (a Go interface), custom (a type with
its own msgpack codec) and ref (a recursive type pointing back to an enclosing struct).
Types and Procedure catalogue entries are msgpack-encodable (the node's OpProcedures
answer) and JSON-friendly (`lockstep procedures --output json`).

It imports nothing from Lockstep (the standard library and msgpack only), so the client
library may import it, as it does procedures/builtin.

# Duties

 1. Of derives a Type from a reflect.Type by the rules the msgpack library follows when it
    encodes and decodes values of that type (struct tags, "-", omitempty, as_array,
    inlined embedded structs, custom codecs), bounded in depth and size.
 2. EncodeJSON turns a JSON value into the msgpack encoding a Go program would send for the
    same value of the described type, checking field names, JSON types and integer ranges.
 3. DecodeJSON turns a msgpack value of the described type back into a value that
    encoding/json prints as the Go type would be printed: struct fields under their Go
    names, in order, bytes as base64.

# Usage

	t := schema.Of(reflect.TypeFor[MyArgs]())
	args, err := schema.EncodeJSON(&t, []byte(`{"Line": "to be or not"}`))
	...
	v, err := schema.DecodeJSON(&resultType, resultBytes)
	out, err := json.Marshal(v)

# Contract

The field keys of Type, Field and Procedure are part of the client protocol (docs/protocol.md,
OpProcedures): add fields, never rename or renumber them. A schema is a description, not a
validator: the server decodes every argument strictly and stays the judge of what it accepts
(DESIGN.md invariant 7).
*/
package schema
