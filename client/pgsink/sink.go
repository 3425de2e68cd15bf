package pgsink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lockstepdb/lockstep/client"
)

// Sink copies one Lockstep stream into one PostgreSQL table: every partition, or, in a
// consumer group (Config.Group), the partitions the group assigns it. Open it, Run it
// once, Close it. It is not safe for concurrent use.
type Sink struct {
	cfg    Config
	log    *slog.Logger
	conn   *pgx.Conn
	origin Origin
	table  target
	typed  *layout             // nil: the raw layout (TableSchema)
	parts  int                 // partitions of the stream
	member *client.GroupMember // nil outside a group

	// The partitions this instance holds now, with its epoch of each and the next offset
	// to write (as stored when it took them, then advanced by its commits).
	epochs map[int]int64
	next   map[int]uint64
	resume map[int]uint64 // the offsets stored at Open, for Resume

	// At-least-once mode: the offsets written but not yet committed.
	pending    map[int]uint64
	lastCommit time.Time

	// Stats.
	records, txs, skipped int64
}

// Open checks everything before the sink reads or writes anything — the config, the DSN,
// the connection, the target table's columns, the stream — then, in a consumer group,
// joins it, creates the sink's own tables if needed and, outside a group, takes the next
// epoch of every partition (fencing any older instance) and reads the offsets to resume
// from. In a group, Run takes the partitions the group assigns.
func Open(ctx context.Context, cfg Config, origin Origin) (*Sink, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var typed *layout
	if cfg.Rows != nil {
		var err error
		if typed, err = newLayout(*cfg.Rows); err != nil {
			return nil, err
		}
	}
	pcfg, err := pgx.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDSN, err)
	}
	pcfg.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(cfg.IdleInTransactionTimeout.Milliseconds(), 10)
	pcfg.RuntimeParams["application_name"] = "lockstep-sink"
	conn, err := pgx.ConnectConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("%w at %s:%d: %w", ErrConnect, pcfg.Host, pcfg.Port, err)
	}
	s := &Sink{cfg: cfg, log: cfg.Logger, conn: conn, origin: origin, typed: typed, epochs: map[int]int64{}, next: map[int]uint64{}}
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Sink) start(ctx context.Context) error {
	var t target
	var err error
	if s.typed != nil {
		// The typed sink may create its table: the stream is checked first, so an unknown
		// one leaves nothing behind.
		if s.parts, err = s.origin.CheckStream(ctx, s.cfg.Stream); err != nil {
			return err
		}
		if t, err = resolveTyped(ctx, s.conn, s.cfg.Table, s.typed); err != nil {
			return err
		}
		if err := s.typed.createStage(ctx, s.conn, t); err != nil {
			return err
		}
	} else {
		if t, err = resolveTable(ctx, s.conn, s.cfg.Table); err != nil {
			return err
		}
		if s.parts, err = s.origin.CheckStream(ctx, s.cfg.Stream); err != nil {
			return err
		}
	}
	s.table = t
	// Checks done: from here on the sink changes things. A group refuses a join to
	// another stream than its own, changing nothing.
	if s.cfg.Group != "" {
		s.member, err = s.origin.JoinGroup(ctx, s.cfg.Group, s.cfg.Stream, s.cfg.Member, client.WithSessionTimeout(s.cfg.GroupSessionTimeout))
		if err != nil {
			return fmt.Errorf("pgsink: join group %q as %q: %w", s.cfg.Group, s.cfg.Member, err)
		}
	}
	if err := s.createTables(ctx); err != nil {
		return err
	}
	if err := checkEpochsLayout(ctx, s.conn, t); err != nil {
		return err
	}
	mode := "exactly-once"
	if s.cfg.AtLeastOnce {
		mode = "at-least-once (offsets committed apart from the rows: duplicates after a crash)"
	}
	if s.member != nil {
		s.resume = map[int]uint64{}
		s.log.Info("sink started", "table", t.String(), "stream", s.cfg.Stream, "group", s.cfg.Group, "member", s.cfg.Member, "mode", mode)
		return nil
	}
	all := make([]int, s.parts)
	for p := range all {
		all[p] = p
	}
	if err := s.claim(ctx, all, 0); err != nil {
		return err
	}
	s.resume = maps.Clone(s.next)
	s.log.Info("sink started", "table", t.String(), "stream", s.cfg.Stream, "epochs", fmtEpochs(s.epochs), "mode", mode, "resume", fmtOffsets(s.next))
	return nil
}

// createTables creates the sink's own tables if they do not exist. Sinks starting
// together (group members) would race in CREATE TABLE IF NOT EXISTS, which is not safe
// against itself in PostgreSQL: a transaction-scoped advisory lock serializes them.
func (s *Sink) createTables(ctx context.Context) error {
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgsink: begin: %w", err)
	}
	defer tx.Rollback(context.Background()) // no-op after Commit
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('lockstep_sink_tables'))`); err != nil {
		return fmt.Errorf("pgsink: lock the sink's tables: %w", err)
	}
	for _, ddl := range []string{fmt.Sprintf(createEpochs, s.table.meta(epochsTable)), fmt.Sprintf(createOffsets, s.table.meta(offsetsTable))} {
		if _, err := tx.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("pgsink: create the sink's tables: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgsink: create the sink's tables: %w", err)
	}
	return nil
}

// claim takes the next epoch of each of parts, in one transaction, in partition order,
// then reads their stored offsets. In a group it takes a partition only if no member of
// a later generation (gen) of the group holds it, and fails with a *FencedError naming
// the group otherwise; outside a group it always takes them.
//
// Taking an epoch waits for an older holder's transaction that holds the epoch row (it
// commits or is rolled back), so the offsets read after it are final: that holder's next
// transaction finds the epoch changed and writes nothing.
func (s *Sink) claim(ctx context.Context, parts []int, gen uint64) error {
	clear(s.epochs)
	clear(s.next)
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgsink: begin: %w", err)
	}
	defer tx.Rollback(context.Background()) // no-op after Commit
	for _, p := range parts {
		var epoch int64
		err := tx.QueryRow(ctx, fmt.Sprintf(`INSERT INTO %s AS e (sink_table, stream, partition, epoch, consumer_group, generation)
			VALUES ($1, $2, $3, 1, $4, $5)
			ON CONFLICT (sink_table, stream, partition) DO UPDATE
			SET epoch = e.epoch + 1, consumer_group = EXCLUDED.consumer_group, generation = EXCLUDED.generation
			WHERE EXCLUDED.consumer_group = '' OR e.consumer_group <> EXCLUDED.consumer_group OR e.generation <= EXCLUDED.generation
			RETURNING epoch`, s.table.meta(epochsTable)),
			s.table.String(), s.cfg.Stream, int32(p), s.cfg.Group, int64(gen)).Scan(&epoch)
		if errors.Is(err, pgx.ErrNoRows) {
			fe := &FencedError{Partition: p, Group: s.cfg.Group}
			var held int64
			if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT generation FROM %s WHERE sink_table = $1 AND stream = $2 AND partition = $3`,
				s.table.meta(epochsTable)), s.table.String(), s.cfg.Stream, int32(p)).Scan(&held); err == nil {
				fe.Generation = uint64(held)
			}
			clear(s.epochs)
			return fe
		}
		if err != nil {
			clear(s.epochs)
			return fmt.Errorf("pgsink: take the epoch of partition %d: %w", p, err)
		}
		s.epochs[p] = epoch
	}
	if err := tx.Commit(ctx); err != nil {
		clear(s.epochs)
		return fmt.Errorf("pgsink: commit the epochs: %w", err)
	}
	ps := make([]int32, len(parts))
	for i, p := range parts {
		ps[i] = int32(p)
	}
	rows, err := s.conn.Query(ctx, fmt.Sprintf(`SELECT partition, next_offset FROM %s WHERE sink_table = $1 AND stream = $2 AND partition = ANY($3)`,
		s.table.meta(offsetsTable)), s.table.String(), s.cfg.Stream, ps)
	if err != nil {
		return fmt.Errorf("pgsink: read the stored offsets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var part int32
		var next int64
		if err := rows.Scan(&part, &next); err != nil {
			return err
		}
		s.next[int(part)] = uint64(next)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pgsink: read the stored offsets: %w", err)
	}
	return nil
}

// Epochs returns this instance's epoch of each partition it holds now.
func (s *Sink) Epochs() map[int]int64 { return maps.Clone(s.epochs) }

// Resume returns, per partition, the next offset stored at Open (a partition missing
// starts at its first retained record). Empty in a group: Run takes the partitions.
func (s *Sink) Resume() map[int]uint64 { return maps.Clone(s.resume) }

// Run copies records until ctx ends (it then returns nil) or a write or read fails; a
// *FencedError means a newer instance took over. Each batch the source returns is one
// transaction: the rows, and in the exactly-once mode the next offset of each partition
// in the batch, committed only while this instance's epoch of each of them is the
// current one.
//
// In a group, Run follows the member's assignment: at each generation it stops writing
// (it starts no transaction after it learns of it), takes the epochs of the partitions assigned
// in the new generation, and reads them from their stored offsets. Fenced by a later
// generation of its own group (the group moved on before the member learned it), it
// learns the new assignment and goes on. It fails when the member is out of the group
// (its session expired: client.ErrNotGroupMember).
func (s *Sink) Run(ctx context.Context) error {
	s.pending = map[int]uint64{}
	s.lastCommit = time.Now()
	if s.member == nil {
		err := s.session(ctx, nil, slices.Sorted(maps.Keys(s.epochs)))
		if ctx.Err() != nil {
			return s.shutdown()
		}
		return err
	}
	for {
		if ctx.Err() != nil {
			return s.shutdown()
		}
		if err := s.member.Err(); err != nil {
			return fmt.Errorf("pgsink: group %q member %q: %w", s.cfg.Group, s.cfg.Member, err)
		}
		changed := s.member.Changed()
		gen, parts := s.member.Current()
		if len(parts) == 0 {
			clear(s.epochs)
			s.log.Info("no partitions assigned", "group", s.cfg.Group, "generation", gen)
			select {
			case <-ctx.Done():
			case <-changed:
			}
			continue
		}
		err := s.claim(ctx, parts, gen)
		if err == nil {
			s.log.Info("partitions taken", "group", s.cfg.Group, "member", s.cfg.Member, "generation", gen,
				"partitions", parts, "epochs", fmtEpochs(s.epochs), "resume", fmtOffsets(s.next))
			clear(s.pending) // at-least-once: offsets not committed are given up
			err = s.session(ctx, changed, parts)
		}
		var fe *FencedError
		switch {
		case ctx.Err() != nil:
			return s.shutdown()
		case err == nil:
			continue // the generation changed
		case errors.As(err, &fe) && fe.Group == s.cfg.Group:
			// A later generation of the group holds a partition: learn it.
			s.log.Info("fenced by a later generation; catching up", "group", s.cfg.Group, "generation", gen, "err", err)
			if herr := s.member.Heartbeat(ctx); herr != nil && ctx.Err() == nil {
				s.log.Warn("group heartbeat failed", "group", s.cfg.Group, "err", herr)
			}
			select {
			case <-ctx.Done():
			case <-changed:
			}
		default:
			return err
		}
	}
}

// session copies parts from s.next until the source or a write fails, ctx ends, or
// changed fires (it then returns nil, having stopped writing: it starts no transaction
// after it). Records trimmed before they were written end it with ErrTrimmed, or with
// TrimmedSkip are logged and skipped.
func (s *Sink) session(ctx context.Context, changed <-chan struct{}, parts []int) error {
	sctx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-changed: // nil outside a group: never
			cancel()
		case <-sctx.Done():
		}
	}()
	defer func() { cancel(); <-watched }()
	for {
		err := s.copy(ctx, sctx, parts)
		var fe *FencedError
		if sctx.Err() != nil && !errors.As(err, &fe) {
			return nil // ctx ended or the generation changed; Run tells which
		}
		var te *client.OffsetTrimmedError
		if !errors.As(err, &te) {
			return err
		}
		from, known := s.next[te.Partition]
		if !known {
			from = te.Offset
		}
		if s.cfg.OnTrimmed != TrimmedSkip {
			return fmt.Errorf("%w: partition %d, offsets %d to %d (OnTrimmed %q: set %q to go on without them): %w",
				ErrTrimmed, te.Partition, from, te.First, s.cfg.OnTrimmed, TrimmedSkip, err)
		}
		s.log.Warn("records trimmed by retention before the sink wrote them: skipped", "partition", te.Partition,
			"from", from, "to", te.First, "records", te.First-from)
		s.skipped += int64(te.First - from)
		s.next[te.Partition] = te.First
	}
}

// copy opens a source of parts from s.next and writes what it delivers until it fails
// or sctx, the session's context, ends. A transaction runs with ctx, not sctx: it is not
// cut short by a generation change (cancelling a query breaks the connection; the epochs
// fence a transaction on a partition already taken), but none starts after it.
func (s *Sink) copy(ctx, sctx context.Context, parts []int) error {
	src, err := s.origin.Open(sctx, s.cfg.Stream, parts, maps.Clone(s.next))
	if err != nil {
		return err
	}
	defer src.Close()
	for {
		recs, err := src.Next(sctx)
		if err != nil {
			return err
		}
		if err := sctx.Err(); err != nil {
			return err
		}
		if err := s.write(ctx, recs); err != nil {
			return err
		}
		if s.cfg.AtLeastOnce && time.Since(s.lastCommit) >= s.cfg.OffsetCommitInterval {
			if err := s.commitOffsets(ctx); err != nil {
				return err
			}
		}
	}
}

// shutdown ends a Run on request: the at-least-once mode commits its offsets.
func (s *Sink) shutdown() error {
	s.log.Info("sink stopping", "records", s.records, "transactions", s.txs)
	if !s.cfg.AtLeastOnce || len(s.pending) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.commitOffsets(ctx)
}

// Close leaves the group, if any (its partitions go to the other members at once), and
// closes the connection.
func (s *Sink) Close() error {
	if s.member != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.member.Leave(ctx); err != nil {
			s.log.Warn("leaving the group failed; it removes the member when its session times out", "group", s.cfg.Group, "err", err)
		}
		cancel()
	}
	return s.conn.Close(context.Background())
}

// write writes recs in one transaction.
func (s *Sink) write(ctx context.Context, recs []client.Record) error {
	next := map[int]uint64{}
	for _, r := range recs {
		if r.Offset >= math.MaxInt64 {
			return fmt.Errorf("pgsink: partition %d offset %d does not fit a bigint", r.Partition, r.Offset)
		}
		next[r.Partition] = max(next[r.Partition], r.Offset+1)
	}
	var typed *typedBatch
	if s.typed != nil {
		var err error
		if typed, err = s.typed.decode(s.cfg.Stream, recs); err != nil {
			return err // before the transaction: nothing of the batch is written
		}
	}
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgsink: begin: %w", err)
	}
	defer tx.Rollback(context.Background()) // no-op after Commit
	if typed != nil {
		if err := s.typed.write(ctx, tx, s.table, typed); err != nil {
			return err
		}
	} else if _, err := tx.CopyFrom(ctx, s.table.ident(), columnNames(), copyRows(s.cfg.Stream, recs)); err != nil {
		return fmt.Errorf("pgsink: copy %d rows into %s: %w", len(recs), s.table, err)
	}
	if err := s.checkEpochs(ctx, tx, slices.Sorted(maps.Keys(next))); err != nil {
		return err
	}
	if !s.cfg.AtLeastOnce {
		if err := s.storeOffsets(ctx, tx, next); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgsink: commit: %w", err)
	}
	s.records += int64(len(recs))
	s.txs++
	maps.Copy(s.next, next)
	if s.cfg.AtLeastOnce {
		maps.Copy(s.pending, next)
	}
	if s.log.Enabled(ctx, slog.LevelDebug) { // not fmtOffsets for every batch otherwise
		s.log.Debug("batch written", "records", len(recs), "next", fmtOffsets(next))
	}
	return nil
}

// copyRows is the COPY source of recs, rows in the order of columnNames. It fills one row
// slice again for each record (pgx encodes a row before it asks for the next), so a batch
// costs no row slice per record.
func copyRows(stream string, recs []client.Record) pgx.CopyFromSource {
	row := make([]any, len(columns))
	row[0] = stream // boxed once
	return pgx.CopyFromSlice(len(recs), func(i int) ([]any, error) {
		r := &recs[i]
		row[1], row[2], row[3], row[4], row[5] = int32(r.Partition), int64(r.Offset), r.Key, r.Data, r.EventTime
		return row, nil
	})
}

// checkEpochs locks the epoch rows of parts (ascending, the order every sink locks them
// in, so two never deadlock) until tx ends, and fails with a *FencedError if one of them
// is no longer this instance's. It comes after the rows' COPY, so the rows are held only
// for the offsets and the commit, and before the offsets, so a zombie meets the fence,
// not ErrOffsetRegress.
func (s *Sink) checkEpochs(ctx context.Context, tx pgx.Tx, parts []int) error {
	ps := make([]int32, len(parts))
	for i, p := range parts {
		ps[i] = int32(p)
	}
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT partition, epoch, consumer_group, generation FROM %s
		WHERE sink_table = $1 AND stream = $2 AND partition = ANY($3) ORDER BY partition FOR UPDATE`,
		s.table.meta(epochsTable)), s.table.String(), s.cfg.Stream, ps)
	if err != nil {
		return fmt.Errorf("pgsink: check the epochs: %w", err)
	}
	defer rows.Close()
	var fenced *FencedError
	seen := 0
	for rows.Next() {
		var part int32
		var epoch, gen int64
		var group string
		if err := rows.Scan(&part, &epoch, &group, &gen); err != nil {
			return fmt.Errorf("pgsink: check the epochs: %w", err)
		}
		seen++
		if mine := s.epochs[int(part)]; epoch != mine && fenced == nil {
			fenced = &FencedError{Partition: int(part), Epoch: mine, Group: group, Generation: uint64(gen)}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pgsink: check the epochs: %w", err)
	}
	if fenced != nil {
		return fenced
	}
	if seen != len(parts) {
		return &FencedError{Partition: parts[0], Epoch: s.epochs[parts[0]]} // rows deleted by hand
	}
	return nil
}

// storeOffsets stores next (per partition, the offset after the last record written) in
// tx. A stored offset only moves forward: one that would not is ErrOffsetRegress.
func (s *Sink) storeOffsets(ctx context.Context, tx pgx.Tx, next map[int]uint64) error {
	parts := slices.Sorted(maps.Keys(next))
	ps := make([]int32, len(parts))
	ns := make([]int64, len(parts))
	for i, p := range parts {
		ps[i], ns[i] = int32(p), int64(next[p])
	}
	tag, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %[1]s AS o (sink_table, stream, partition, next_offset)
		SELECT $1, $2, p, n FROM unnest($3::integer[], $4::bigint[]) AS u(p, n)
		ON CONFLICT (sink_table, stream, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset
		WHERE o.next_offset < EXCLUDED.next_offset`, s.table.meta(offsetsTable)),
		s.table.String(), s.cfg.Stream, ps, ns)
	if err != nil {
		return fmt.Errorf("pgsink: store offsets: %w", err)
	}
	if tag.RowsAffected() != int64(len(parts)) {
		return fmt.Errorf("%w: partitions %v, next offsets %v", ErrOffsetRegress, parts, ns)
	}
	return nil
}

// commitOffsets stores the at-least-once mode's pending offsets in a transaction of
// their own.
func (s *Sink) commitOffsets(ctx context.Context) error {
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgsink: begin: %w", err)
	}
	defer tx.Rollback(context.Background())
	if err := s.checkEpochs(ctx, tx, slices.Sorted(maps.Keys(s.pending))); err != nil {
		return err
	}
	if err := s.storeOffsets(ctx, tx, s.pending); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgsink: commit offsets: %w", err)
	}
	clear(s.pending)
	s.lastCommit = time.Now()
	return nil
}

// Stats returns the records and transactions this instance has written, and the records
// it skipped because retention had trimmed them (TrimmedSkip).
func (s *Sink) Stats() (records, transactions, skipped int64) { return s.records, s.txs, s.skipped }

// fmtPartitions prints m's values in partition order, "partition:value" apart by
// spaces; an empty m prints none.
func fmtPartitions[V int64 | uint64](m map[int]V, none string) string {
	if len(m) == 0 {
		return none
	}
	var b strings.Builder
	for _, p := range slices.Sorted(maps.Keys(m)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d", p, m[p])
	}
	return b.String()
}

// fmtEpochs prints epochs per partition in partition order.
func fmtEpochs(m map[int]int64) string { return fmtPartitions(m, "") }

// fmtOffsets prints offsets per partition in partition order.
func fmtOffsets(m map[int]uint64) string { return fmtPartitions(m, "none stored") }
