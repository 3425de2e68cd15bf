package pgsink

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Sink copies one Lockstep stream into one PostgreSQL table. Open it, Run it once, Close
// it. It is not safe for concurrent use.
type Sink struct {
	cfg    Config
	log    *slog.Logger
	conn   *pgx.Conn
	origin Origin
	table  target
	epoch  int64
	from   map[int]uint64 // per partition, the next offset to write, as stored at start

	// At-least-once mode: the offsets written but not yet committed.
	pending    map[int]uint64
	lastCommit time.Time

	// Stats.
	records, txs int64
}

// Open checks everything before the sink reads or writes anything — the config, the DSN,
// the connection, the target table's columns, the stream — then creates the sink's own
// tables if needed, takes the next epoch (fencing any older instance) and reads the
// offsets to resume from.
func Open(ctx context.Context, cfg Config, origin Origin) (*Sink, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
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
	s := &Sink{cfg: cfg, log: cfg.Logger, conn: conn, origin: origin}
	if err := s.start(ctx); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return s, nil
}

func (s *Sink) start(ctx context.Context) error {
	t, err := resolveTable(ctx, s.conn, s.cfg.Table)
	if err != nil {
		return err
	}
	s.table = t
	if err := s.origin.CheckStream(ctx, s.cfg.Stream); err != nil {
		return err
	}
	// Checks done: from here on the sink writes.
	for _, ddl := range []string{fmt.Sprintf(createEpochs, t.meta(epochsTable)), fmt.Sprintf(createOffsets, t.meta(offsetsTable))} {
		if _, err := s.conn.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("pgsink: create the sink's tables: %w", err)
		}
	}
	// Taking the epoch waits for an older instance's transaction that holds the epoch row
	// (it commits or is rolled back), so the offsets read after it are final: that
	// instance's next transaction finds the epoch changed and writes nothing.
	err = s.conn.QueryRow(ctx, fmt.Sprintf(`INSERT INTO %s AS e (sink_table, stream, epoch) VALUES ($1, $2, 1)
		ON CONFLICT (sink_table, stream) DO UPDATE SET epoch = e.epoch + 1 RETURNING epoch`, t.meta(epochsTable)),
		t.String(), s.cfg.Stream).Scan(&s.epoch)
	if err != nil {
		return fmt.Errorf("pgsink: take the sink epoch: %w", err)
	}
	rows, err := s.conn.Query(ctx, fmt.Sprintf(`SELECT partition, next_offset FROM %s WHERE sink_table = $1 AND stream = $2`,
		t.meta(offsetsTable)), t.String(), s.cfg.Stream)
	if err != nil {
		return fmt.Errorf("pgsink: read the stored offsets: %w", err)
	}
	s.from = map[int]uint64{}
	for rows.Next() {
		var part int32
		var next int64
		if err := rows.Scan(&part, &next); err != nil {
			rows.Close()
			return err
		}
		s.from[int(part)] = uint64(next)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pgsink: read the stored offsets: %w", err)
	}
	mode := "exactly-once"
	if s.cfg.AtLeastOnce {
		mode = "at-least-once (offsets committed apart from the rows: duplicates after a crash)"
	}
	s.log.Info("sink started", "table", t.String(), "stream", s.cfg.Stream, "epoch", s.epoch, "mode", mode, "resume", fmtOffsets(s.from))
	return nil
}

// Epoch returns the epoch this instance took at Open.
func (s *Sink) Epoch() int64 { return s.epoch }

// Resume returns, per partition, the next offset stored at Open (a partition missing
// starts at its first retained record).
func (s *Sink) Resume() map[int]uint64 { return maps.Clone(s.from) }

// Run copies records until ctx ends (it then returns nil) or a write or read fails; a
// *FencedError means a newer instance took over. Each batch the source returns is one
// transaction: the rows, and in the exactly-once mode the next offset of each partition
// in the batch, committed only while this instance's epoch is the current one.
func (s *Sink) Run(ctx context.Context) error {
	src, err := s.origin.Open(ctx, s.cfg.Stream, s.from)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer src.Close()
	s.pending = map[int]uint64{}
	s.lastCommit = time.Now()
	for {
		recs, err := src.Next(ctx)
		if ctx.Err() != nil {
			return s.shutdown()
		}
		if err != nil {
			return err
		}
		if err := s.write(ctx, recs); err != nil {
			if ctx.Err() != nil {
				return s.shutdown() // the transaction was cut short and rolled back
			}
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

// Close closes the connection.
func (s *Sink) Close() error { return s.conn.Close(context.Background()) }

// write writes recs in one transaction.
func (s *Sink) write(ctx context.Context, recs []Record) error {
	next := map[int]uint64{}
	rows := make([][]any, len(recs))
	for i, r := range recs {
		if r.Offset >= math.MaxInt64 {
			return fmt.Errorf("pgsink: partition %d offset %d does not fit a bigint", r.Partition, r.Offset)
		}
		rows[i] = []any{s.cfg.Stream, int32(r.Partition), int64(r.Offset), r.Key, r.Value, r.EventTime}
		next[r.Partition] = max(next[r.Partition], r.Offset+1)
	}
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgsink: begin: %w", err)
	}
	defer tx.Rollback(context.Background()) // no-op after Commit
	if _, err := tx.CopyFrom(ctx, s.table.ident(), columnNames(), pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("pgsink: copy %d rows into %s: %w", len(rows), s.table, err)
	}
	if err := s.checkEpoch(ctx, tx); err != nil {
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
	if s.cfg.AtLeastOnce {
		maps.Copy(s.pending, next)
	}
	s.log.Debug("batch written", "records", len(recs), "next", fmtOffsets(next))
	return nil
}

// checkEpoch locks the sink's epoch row until tx ends and fails with a *FencedError if it
// is no longer this instance's. It comes after the rows' COPY, so the row is held only for
// the offsets and the commit, and before the offsets, so a zombie meets the fence, not
// ErrOffsetRegress.
func (s *Sink) checkEpoch(ctx context.Context, tx pgx.Tx) error {
	tag, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %s SET epoch = epoch WHERE sink_table = $1 AND stream = $2 AND epoch = $3`,
		s.table.meta(epochsTable)), s.table.String(), s.cfg.Stream, s.epoch)
	if err != nil {
		return fmt.Errorf("pgsink: check the epoch: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return &FencedError{Epoch: s.epoch}
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
	if err := s.checkEpoch(ctx, tx); err != nil {
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

// Stats returns the records and transactions this instance has written.
func (s *Sink) Stats() (records, transactions int64) { return s.records, s.txs }

// fmtOffsets prints offsets per partition in partition order.
func fmtOffsets(m map[int]uint64) string {
	if len(m) == 0 {
		return "none stored"
	}
	out := ""
	for _, p := range slices.Sorted(maps.Keys(m)) {
		if out != "" {
			out += " "
		}
		out += fmt.Sprintf("%d:%d", p, m[p])
	}
	return out
}
