package cliout

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// The two output formats of --output.
const (
	Table = "table"
	JSON  = "json"
)

// Format checks an --output value: it returns f if it is Table or JSON, else an error
// naming it.
func Format(f string) (string, error) {
	switch f {
	case Table, JSON:
		return f, nil
	default:
		return "", fmt.Errorf("--output %q: want table or json", f)
	}
}

// WriteJSON writes v as indented JSON and a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// NewTable returns a tabwriter for aligned columns; Flush it when done.
func NewTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// Dash renders an empty cell as "-".
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// YesNo renders a boolean cell.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Done writes what a command did: v as JSON for the JSON format, else the sentence of
// format and args on a line.
func Done(w io.Writer, outFormat string, v any, format string, args ...any) error {
	if outFormat == JSON {
		return WriteJSON(w, v)
	}
	_, err := fmt.Fprintf(w, format+"\n", args...)
	return err
}
