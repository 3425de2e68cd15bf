package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/profile"
	"github.com/lockstepdb/lockstep/internal/clusterstatus"
	"github.com/lockstepdb/lockstep/internal/demo"
	"github.com/lockstepdb/lockstep/internal/invoke"
)

// The exit codes of every command: one table (exitTable), documented in docs/cli.md
// (TestExitCodesDocumented holds the two equal). A command's error is matched against the
// rows' errors with errors.Is, in exitMatchOrder; no match is exitFailure.
const (
	exitOK             = 0
	exitFailure        = 1
	exitNoLeader       = 2
	exitDivergent      = 3
	exitUnreachable    = 4
	exitNotReady       = 5
	exitRefused        = 6
	exitNotFound       = 7
	exitRejected       = 8
	exitUnknownOutcome = 9
	exitCheckFailed    = 10
)

// errCannotReach: no node of the cluster answered within --timeout (dialFailed).
var errCannotReach = errors.New("cannot reach the cluster")

// exitRow is one exit code: its number, a stable name, when it is given, and the errors
// that give it.
type exitRow struct {
	code int
	name string
	when string
	errs []error
}

// exitTable is every exit code, by number.
var exitTable = []exitRow{
	{exitOK, "ok", "the command did what it was asked", nil},
	{exitFailure, "failure", "anything no other code names: bad flags or arguments, a local file, an unexpected error", nil},
	{exitNoLeader, "no-leader", "`cluster status`: no node that answered leads or knows a leader", []error{clusterstatus.ErrNoLeader}},
	{exitDivergent, "divergent", "`cluster status`: a replica's state differs from its peers'; any command: the node answered Divergent",
		[]error{clusterstatus.ErrDivergent, client.ErrDivergent}},
	{exitUnreachable, "unreachable", "`cluster status`: a member did not answer; any command: no answer from the cluster within `--timeout`",
		[]error{clusterstatus.ErrUnreachable, errCannotReach, client.ErrUnreachable, client.ErrRetriesExhausted, context.DeadlineExceeded}},
	{exitNotReady, "not-ready", "`cluster status`: a member is not ready (catching up, incompatible, ...); any command: the node answered NotReady",
		[]error{clusterstatus.ErrNotReady, client.ErrNotReady}},
	{exitRefused, "refused", "the cluster refused this client: permission denied, the TLS handshake, another cluster id or protocol",
		[]error{client.ErrPermissionDenied, client.ErrTLS, client.ErrClusterMismatch, client.ErrProtocolVersion}},
	{exitNotFound, "not-found", "`get` of a key without a value; an unknown stream, group, procedure, user, member or context",
		[]error{errKeyNotFound, client.ErrUnknownStream, client.ErrUnknownGroup, client.ErrUnknownProcedure, invoke.ErrUnknownProcedure,
			client.ErrUnknownUser, client.ErrUnknownMember, profile.ErrUnknownContext}},
	{exitRejected, "rejected", "the cluster refused the request and nothing changed: bad arguments, the procedure's error, too large, bad scope, the stream exists, an offset retention trimmed, a stale group member",
		[]error{client.ErrBadArguments, client.ErrProcedure, client.ErrTooLarge, client.ErrBadScope, client.ErrStreamExists,
			client.ErrOffsetTrimmed, client.ErrOffsetPastEnd, client.ErrNotGroupMember, client.ErrStaleGeneration,
			client.ErrNotAssigned, client.ErrRebuildRefused}},
	{exitUnknownOutcome, "unknown-outcome", "a write may or may not have run, and the client can no longer find out (check, then retry)",
		[]error{client.ErrUnknownOutcome}},
	{exitCheckFailed, "check-failed", "`demo`'s exactly-once check or a `jepsen run` failed; the report says why",
		[]error{demo.ErrCheckFailed, errJepsenFailed}},
}

// exitMatchOrder is the order the rows are tried in, most specific first: an error that
// wraps several (a timeout whose last cause was a refusal) gets the first. Unreachable is
// last: a deadline says least about why.
var exitMatchOrder = []int{exitCheckFailed, exitUnknownOutcome, exitRefused, exitNotFound, exitRejected,
	exitNoLeader, exitDivergent, exitNotReady, exitUnreachable}

// exitCode returns the exit code of a command that failed with err.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	for _, code := range exitMatchOrder {
		for _, e := range exitTable[code].errs {
			if errors.Is(err, e) {
				return code
			}
		}
	}
	return exitFailure
}

// exitTableMarkdown is the table of docs/cli.md's "Exit codes", as the code has it.
func exitTableMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | name | when |\n|---|---|---|\n")
	for _, r := range exitTable {
		fmt.Fprintf(&b, "| %d | %s | %s |\n", r.code, r.name, r.when)
	}
	return b.String()
}
