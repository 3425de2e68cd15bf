package procedures

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
)

// Changelogs: a table declared with PublishChanges appends every change to a stream, in
// the transaction that makes the change (partition.Config.Changelogs, docs/streams.md).

// Errors of PublishChanges; the registry is unchanged after each.
var (
	// ErrBadChangelog is returned for a bad table or stream name, a sys.* or replicated
	// table, or a stream that is already another table's changelog.
	ErrBadChangelog = errors.New("bad changelog declaration")
	// ErrDuplicateChangelog is returned when a table already publishes its changes.
	ErrDuplicateChangelog = errors.New("table already publishes its changes")
)

// PublishChanges declares that every change to table is appended to stream, on the
// partition of the change and in the same transaction: a put appends (row key, '+'
// value), a delete of an existing row appends (row key, '-'); partition.DecodeChange
// reads them. The stream is created like any other (stream.create, usually with
// compaction); until it exists, writes to table fail with partition.ErrUnknownStream.
// It refuses a table that already publishes (ErrDuplicateChangelog), bad names, a sys.*
// or replicated table and a stream another table publishes to (ErrBadChangelog).
// Declaring table replicated afterwards makes replica.New fail (partition.ErrBadConfig).
func PublishChanges(r *Registry, table, stream string) error {
	if _, dup := r.changelogs[table]; dup {
		return fmt.Errorf("%w: %s", ErrDuplicateChangelog, table)
	}
	next := maps.Clone(r.changelogs)
	if next == nil {
		next = map[string]string{}
	}
	next[table] = stream
	cfg := partition.Config{Partitions: 1, ReplicatedTables: r.replicated, Changelogs: next}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %s → %s: %w", ErrBadChangelog, table, stream, err)
	}
	r.changelogs = next
	return nil
}

// Changelogs returns the declared changelogs, table → stream, for partition.Config.
func (r *Registry) Changelogs() map[string]string { return maps.Clone(r.changelogs) }

// changelogFingerprint renders the declarations for Fingerprint, in table order.
func (r *Registry) changelogFingerprint() string {
	var b strings.Builder
	for _, t := range slices.Sorted(maps.Keys(r.changelogs)) {
		fmt.Fprintf(&b, "changelog|%q|%q\n", t, r.changelogs[t])
	}
	return b.String()
}
