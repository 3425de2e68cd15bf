package cliout

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockstepdb/lockstep/client/profile"
)

// ContextRow is one context of `context list` and `context show`.
type ContextRow struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	profile.Settings
	// Timeout shadows Settings.Timeout in JSON: a duration as text ("5s"), not nanoseconds.
	Timeout string `json:"timeout,omitempty"`
}

// ContextRows returns the rows of f's contexts, by name; only the one named only, if
// only is not empty.
func ContextRows(f *profile.File, only string) []ContextRow {
	rows := []ContextRow{}
	for _, n := range f.Names() {
		if only == "" || n == only {
			rows = append(rows, NewContextRow(n, n == f.Current, f.Contexts[n]))
		}
	}
	return rows
}

// NewContextRow is the row of context name.
func NewContextRow(name string, current bool, s profile.Settings) ContextRow {
	r := ContextRow{Name: name, Current: current, Settings: s}
	if s.Timeout > 0 {
		r.Timeout = s.Timeout.String()
	}
	return r
}

// Contexts prints contexts: one row each, * marking the current one.
func Contexts(w io.Writer, format string, rows []ContextRow) error {
	if format == JSON {
		return WriteJSON(w, rows)
	}
	tw := NewTable(w)
	fmt.Fprintln(tw, "CURRENT\tNAME\tADDRS\tSECURITY\tUSER\tCLUSTER-ID\tTIMEOUT")
	for _, r := range rows {
		cur, sec := "", "-"
		if r.Current {
			cur = "*"
		}
		switch {
		case r.Insecure:
			sec = "insecure"
		case r.CertsDir != "":
			sec = r.CertsDir
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cur, r.Name, Dash(strings.Join(r.Addrs, ",")), sec, Dash(r.User),
			Dash(r.ClusterID), Dash(r.Timeout))
	}
	return tw.Flush()
}
