package cliout

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockstepdb/lockstep/internal/certs"
)

// CertJSON is one certificate of `cert list --output json`.
type CertJSON struct {
	File    string   `json:"file"`
	Kind    string   `json:"kind"`
	Name    string   `json:"name"`
	Hosts   []string `json:"hosts,omitempty"`
	Expires string   `json:"expires,omitempty"`
	Status  string   `json:"status"`
}

// Certs prints one line per certificate of a directory (certs.List) with its check, and
// returns how many are not usable.
func Certs(w io.Writer, format string, infos []certs.Info) (bad int, err error) {
	if format == JSON {
		rows := []CertJSON{}
		for _, in := range infos {
			r := CertJSON{File: in.File, Kind: in.Kind.String(), Name: in.Name, Hosts: in.Hosts, Status: "ok"}
			if !in.NotAfter.IsZero() {
				r.Expires = in.NotAfter.UTC().Format(time.RFC3339)
			}
			if in.Err != nil {
				r.Status, bad = in.Err.Error(), bad+1
			}
			rows = append(rows, r)
		}
		return bad, WriteJSON(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tKIND\tNAME\tHOSTS\tEXPIRES\tSTATUS")
	for _, in := range infos {
		status := "ok"
		if in.Err != nil {
			status, bad = in.Err.Error(), bad+1
		}
		expires := ""
		if !in.NotAfter.IsZero() {
			expires = in.NotAfter.UTC().Format(time.DateOnly)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", in.File, in.Kind, in.Name, strings.Join(in.Hosts, ","), expires, status)
	}
	return bad, tw.Flush()
}
