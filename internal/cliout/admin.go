package cliout

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Text is a result that the table format prints as it is, on a line (Result).
type Text string

// Result prints a command's result in format: JSON as it is; for the table format a Text
// on its line, a group or stream description as its tables, anything else as Value.
func Result(w io.Writer, format string, v any) error {
	if format == JSON {
		return WriteJSON(w, v)
	}
	switch x := v.(type) {
	case Text:
		_, err := fmt.Fprintln(w, string(x))
		return err
	case builtin.GroupDescription:
		return GroupDescription(w, x)
	case builtin.StreamDescription:
		if err := Value(w, reflect.ValueOf(x.Definition)); err != nil {
			return err
		}
		fmt.Fprintln(w)
		return Value(w, reflect.ValueOf(x.Partitions))
	}
	return Value(w, reflect.ValueOf(v))
}

// Deployment prints the cluster version, the active registrations and the modules.
func Deployment(w io.Writer, format string, d client.Deployment) error {
	if format == JSON {
		return WriteJSON(w, d)
	}
	tw := NewTable(w)
	fmt.Fprintf(tw, "cluster version\t%d\n", d.ClusterVersion)
	for _, a := range d.Active {
		fmt.Fprintf(tw, "active\t%s\n", a)
	}
	for _, m := range d.Modules {
		fmt.Fprintf(tw, "module\t%s\n", m)
	}
	return tw.Flush()
}

// Module prints a module's history, then its source.
func Module(w io.Writer, m client.Module) error {
	tw := NewTable(w)
	state := "active"
	if !m.Active {
		state = "removed"
	}
	fmt.Fprintf(tw, "module\t%s (%s, v%d, %s)\n", m.Name, m.Kind, m.Version, state)
	for _, h := range m.History {
		if h.Removed {
			fmt.Fprintf(tw, "v%d\tremoved at index %d\n", h.Version, h.Index)
			continue
		}
		fmt.Fprintf(tw, "v%d\tdeployed at index %d, source %016x\n", h.Version, h.Index, h.SourceHash)
	}
	if len(m.Procedures) > 0 {
		fmt.Fprintf(tw, "procedures\t%s\n", strings.Join(m.Procedures, " "))
	}
	if len(m.Processors) > 0 {
		fmt.Fprintf(tw, "processors\t%s\n", strings.Join(m.Processors, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(m.Source) > 0 {
		fmt.Fprintf(w, "\n%s", m.Source)
	}
	return nil
}

// ClusterConfig prints the replicated configuration: version, index, every setting.
func ClusterConfig(w io.Writer, format string, conf client.ClusterConfig) error {
	if format == JSON {
		return WriteJSON(w, conf)
	}
	tw := NewTable(w)
	fmt.Fprintf(tw, "version\t%d\n", conf.Version)
	fmt.Fprintf(tw, "index\t%d\n", conf.Index)
	for _, s := range conf.Settings {
		fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Value)
	}
	return tw.Flush()
}

// Users prints one line per user: name, role and its grants (GrantsText).
func Users(w io.Writer, format string, users []client.User) error {
	if format == JSON {
		return WriteJSON(w, users)
	}
	for _, u := range users {
		fmt.Fprintf(w, "%-20s %-7s %s\n", u.Name, u.Role, GrantsText(u))
	}
	return nil
}

// GrantsText says which procedures a writer may invoke; empty for other roles.
func GrantsText(u client.User) string {
	switch {
	case u.Role != client.RoleWriter:
		return ""
	case !u.Limited:
		return "all procedures"
	case len(u.Procedures) == 0:
		return "read-only procedures only"
	}
	return strings.Join(u.Procedures, " ")
}

// groupMemberRow is a member as the table of group describe shows it.
type groupMemberRow struct {
	Member     string
	Partitions []int32
	Heartbeat  string
	Timeout    time.Duration
}

// GroupDescription prints a group description as three tables: the group, its members,
// its offsets.
func GroupDescription(w io.Writer, d builtin.GroupDescription) error {
	head := struct {
		Group      string
		Stream     string
		Generation uint64
		Members    int
	}{d.Group, d.Stream, d.Generation, len(d.Members)}
	if err := Value(w, reflect.ValueOf(head)); err != nil {
		return err
	}
	rows := make([]groupMemberRow, len(d.Members))
	for i, m := range d.Members {
		rows[i] = groupMemberRow{Member: m.Member, Partitions: m.Partitions,
			Heartbeat: time.UnixMilli(m.LastHeartbeatMs).UTC().Format(time.RFC3339Nano),
			Timeout:   time.Duration(m.SessionTimeoutMs) * time.Millisecond}
	}
	fmt.Fprintln(w)
	if err := Value(w, reflect.ValueOf(rows)); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return Value(w, reflect.ValueOf(d.Offsets))
}
