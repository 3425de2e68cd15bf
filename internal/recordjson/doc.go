/*
Package recordjson is the JSON form of stream records on the command line: the lines
`lockstep stream read` and `stream tail` print and `stream append` reads, and the values
of streams whose value type is known, converted between JSON and their msgpack encoding.

# Duties

 1. Resolve a stream's value type (ValueType): auto (by the stream's name: the built-in
    pipeline's streams, dead letters; procedures.DefaultStreamValueType), raw (bytes as
    they are), or a type's name (procedures.StreamValueTypes).
 2. Convert values: JSON text to a record value (EncodeValue), a value to JSON
    (DecodeValue) or to a table cell (ValueCell).
 3. Print records (WriteRecords, WriteTail): a table row each, or one JSON object a line
    (Record: key, key_text, event_time, data, text, value).
 4. Read records (ReadLines): one JSON object a line, the fields WriteRecords prints, so
    that its output can be fed back.

# Usage

	vt, err := recordjson.ValueType(flagValue, stream)
	err = recordjson.ReadLines(os.Stdin, vt, func(r client.StreamRecord) error { ... })
	err = recordjson.WriteRecords(os.Stdout, cliout.JSON, stream, part, vt, recs)

# Contract

A nil value type means raw bytes. Bad input (a line that is not a record object, a value
that is not of the stream's type) is an error naming the line or the type; nothing is
handed on for it.
*/
package recordjson
