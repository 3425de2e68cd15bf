/*
Package cliout renders library values for the lockstep command line: the two formats of
every command's --output (table for people, json for programs) and the tables of the
client's admin types.

# Duties

 1. Name the formats (Table, JSON) and check a --output value (Format).
 2. Write JSON (WriteJSON: indented, a newline) and aligned columns (NewTable).
 3. Render any decoded value as a table: a typed Go value by reflection (Value), a value
    decoded by its schema (Dynamic), one cell of either (Cell, DynamicCell), bytes as text
    when they are printable (BytesText).
 4. Render the client's admin results as the commands print them: deployments, modules,
    the cluster configuration, processors, consumer groups, procedures, certificates,
    users, a Kafka source's lag; the data verbs' JSON (KVJSON, KVValue).

# Usage

	if format == cliout.JSON {
		return cliout.WriteJSON(w, v)
	}
	return cliout.Value(w, reflect.ValueOf(v))

# Contract

Renderers only write to the io.Writer they are given and return its error; they never
read flags or the environment. Table output is for people and may change; JSON output is
the stable form scripts read.
*/
package cliout
