package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// SQL is Lockstep's SQL surface (docs/sql.md, "Surfaces"): Exec deploys and drops
// streams, tables and materialized views through the log and appends rows through the
// exactly-once session; Query answers a SELECT, SHOW or EXPLAIN from state.
type SQL struct{ c *Client }

// SQL returns the client's SQL surface.
func (c *Client) SQL() SQL { return SQL{c} }

// ModuleKindSQL is the kind of the modules SQL deploys; ModuleKindSource that of a
// CREATE SOURCE's (docs/sources.md).
const (
	ModuleKindSQL    = "sql"
	ModuleKindSource = "source"
)

// ExecResult says what Exec did.
type ExecResult struct {
	// Deployed is the module a CREATE deployed (named after its first stream, table or
	// view), Dropped the modules a DROP removed.
	Deployed string
	Dropped  []string
	// Appended counts the rows an INSERT appended.
	Appended int
	// Rows are the answer of a SELECT, SHOW or EXPLAIN passed to Exec.
	Rows *Rows
	// Deployment is the cluster's deployment after a CREATE or DROP.
	Deployment Deployment
}

// SQLError is a refused SQL command, at its place in the text (Line and Column are
// 1-based; 0 when the error has none). It matches ErrBadArguments.
type SQLError struct {
	Line, Column int
	Msg          string
	Err          error
}

func (e *SQLError) Error() string { return e.Err.Error() }

// Unwrap returns the error the server answered.
func (e *SQLError) Unwrap() error { return e.Err }

var placeRe = regexp.MustCompile(`sql: (\d+):(\d+): (.*)`)

// sqlErr turns a BadArguments answer into an *SQLError with its place.
func sqlErr(err error) error {
	if !errors.Is(err, ErrBadArguments) {
		return err
	}
	e := &SQLError{Err: err, Msg: err.Error()}
	if m := placeRe.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Column, _ = strconv.Atoi(m[2])
		e.Msg = m[3]
	}
	return e
}

// Exec runs one SQL command: CREATE STREAM, CREATE TABLE and CREATE MATERIALIZED VIEW
// statements (one script, deployed as one module through the log: the leader compiles it,
// every replica runs the plan from one log index; needs admin), DROP STREAM|TABLE|
// MATERIALIZED VIEW (removes the modules that defined them; needs admin), or INSERT INTO
// ... VALUES (appends the rows through the exactly-once session: the rows of one stream
// in one invocation, all or none). A bad command is an *SQLError naming the line and
// column, and nothing changes.
func (s SQL) Exec(ctx context.Context, text string) (ExecResult, error) {
	res, err := s.command(ctx, text, ReadLinearizable, 0)
	if err != nil {
		return ExecResult{}, err
	}
	var out ExecResult
	switch res.Kind {
	case wire.SQLRows:
		out.Rows = rowsOf(res)
	case wire.SQLDeploy:
		kind := res.ModuleKind
		if kind == "" {
			kind = ModuleKindSQL
		}
		d, err := s.c.deployCall(ctx, "sql deploy "+res.Module, wire.ClusterConfigArgs{Cmd: wire.ConfigDeployModule,
			Module: res.Module, Kind: kind, Source: res.Source})
		if err != nil {
			// A retry after a lost answer finds its own deploy applied: the module runs
			// exactly this source.
			m, merr := s.c.Procedures().Module(ctx, res.Module)
			if merr != nil || !m.Active || !bytes.Equal(m.Source, res.Source) {
				return out, sqlErr(err)
			}
			if d, err = s.c.Procedures().Deployment(ctx); err != nil {
				return out, err
			}
		}
		out.Deployed, out.Deployment = res.Module, d
	case wire.SQLDrop:
		return s.drop(ctx, res.Modules)
	case wire.SQLInsert:
		for i := 0; i < len(res.Appends); {
			j := i
			var recs []StreamRecord
			for ; j < len(res.Appends) && res.Appends[j].Stream == res.Appends[i].Stream; j++ {
				a := res.Appends[j]
				r := StreamRecord{Key: a.Key, Value: a.Value}
				if a.EventTimeMs != 0 {
					r.EventTime = time.UnixMilli(a.EventTimeMs)
				}
				recs = append(recs, r)
			}
			if _, err := s.c.AppendBatch(ctx, res.Appends[i].Stream, recs); err != nil {
				return out, err
			}
			out.Appended += len(recs)
			i = j
		}
	default:
		return out, fmt.Errorf("client: sql: %w: answer of kind %q", ErrMalformed, res.Kind)
	}
	return out, nil
}

// QueryOption sets how fresh the state a Query reads must be.
type QueryOption func(*queryOptions)

type queryOptions struct {
	cons   Consistency
	maxLag time.Duration
}

// WithReadAny lets any ready replica answer from its state, possibly stale.
func WithReadAny() QueryOption { return func(o *queryOptions) { o.cons = ReadAny } }

// WithMaxLag lets any replica answer that can prove its state is at most d stale
// (bounded staleness, as QueryBounded).
func WithMaxLag(d time.Duration) QueryOption {
	return func(o *queryOptions) { o.cons, o.maxLag = readBounded, d }
}

// Query answers a SELECT over a table or view (ORDER BY, LIMIT, WHERE on any column),
// SHOW STREAMS|TABLES|VIEWS or EXPLAIN (of a script, compiled and not deployed, or of a
// deployed name) from state: linearizable by default (the leader, off the log), or as the
// options say. Anything else is ErrBadArguments.
func (s SQL) Query(ctx context.Context, text string, opts ...QueryOption) (*Rows, error) {
	o := queryOptions{cons: ReadLinearizable}
	for _, f := range opts {
		f(&o)
	}
	if o.cons == readBounded && o.maxLag <= 0 {
		return nil, fmt.Errorf("client: sql: %w: staleness bound %v, want a positive duration", ErrBadArguments, o.maxLag)
	}
	res, err := s.command(ctx, text, o.cons, o.maxLag)
	if err != nil {
		return nil, err
	}
	if res.Kind != wire.SQLRows {
		return nil, fmt.Errorf("client: sql: %w: Query answers SELECT, SHOW and EXPLAIN; run this with Exec", ErrBadArguments)
	}
	return rowsOf(res), nil
}

func (s SQL) command(ctx context.Context, text string, cons Consistency, maxLag time.Duration) (wire.SQLResult, error) {
	c := s.c
	args, err := msgpack.Marshal(&wire.SQLArgs{Text: text})
	if err != nil {
		return wire.SQLResult{}, fmt.Errorf("client: sql: %w", err)
	}
	req := wire.Request{Op: wire.OpSQL, Args: args, Consistency: wire.Consistency(cons), MaxLag: uint64(maxLag)}
	if err := c.acquireFree(ctx); err != nil {
		return wire.SQLResult{}, c.opErr(fmt.Errorf("client: sql: %w", err))
	}
	defer c.releaseFree()
	resp, err := c.call(ctx, "sql", &req, cons == ReadLinearizable)
	if err != nil {
		return wire.SQLResult{}, sqlErr(c.opErr(err))
	}
	var res wire.SQLResult
	if err := msgpack.Unmarshal(resp.Value, &res); err != nil {
		return res, fmt.Errorf("client: sql: %w: %w", ErrMalformed, err)
	}
	return res, nil
}

// Column is one column of Rows: its name and SQL type (bigint, double, text, bytea,
// boolean, timestamp, interval).
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Rows is the answer of a query: columns and rows of typed values, each an int64
// (bigint), float64 (double), string (text), []byte (bytea), bool (boolean), time.Time
// (timestamp, UTC), time.Duration (interval) or nil (NULL).
type Rows struct {
	Columns []Column
	Rows    [][]any
}

func rowsOf(res wire.SQLResult) *Rows {
	r := &Rows{Rows: make([][]any, len(res.Rows))}
	for _, c := range res.Columns {
		r.Columns = append(r.Columns, Column(c))
	}
	for i, row := range res.Rows {
		out := make([]any, len(row))
		for j, v := range row {
			typ := ""
			if j < len(r.Columns) {
				typ = r.Columns[j].Type
			}
			out[j] = typed(typ, v)
		}
		r.Rows[i] = out
	}
	return r
}

// typed converts a decoded msgpack value to the Go type of the SQL type typ.
func typed(typ string, v any) any {
	if v == nil {
		return nil
	}
	i, isInt := asInt(v)
	switch typ {
	case "bigint":
		if isInt {
			return i
		}
	case "double":
		switch x := v.(type) {
		case float64:
			return x
		case float32:
			return float64(x)
		}
		if isInt {
			return float64(i)
		}
	case "timestamp":
		if isInt {
			return time.UnixMilli(i).UTC()
		}
	case "interval":
		if isInt {
			return time.Duration(i) * time.Millisecond
		}
	case "bytea":
		if s, ok := v.(string); ok {
			return []byte(s)
		}
	}
	return v
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64 // beyond: no bigint, left as it came
	}
	return 0, false
}

// sqlDropTogetherVersion is the cluster version from which the modules of one DROP are
// removed together, in one log entry (replica.VersionSQLDrop).
const sqlDropTogetherVersion = 5

// drop removes the modules of one DROP: together, all or none, from cluster version 5;
// one after the other before. A removal whose answer was lost (a timeout, a leader
// change) counts as done if the module is found removed, so a DROP retried after an
// unknown outcome neither fails half-way nor removes only some of its modules.
func (s SQL) drop(ctx context.Context, mods []string) (ExecResult, error) {
	var out ExecResult
	removed := func(names []string) (Deployment, bool) {
		for _, name := range names {
			if m, err := s.c.Procedures().Module(ctx, name); err != nil || m.Active {
				return Deployment{}, false
			}
		}
		d, err := s.c.Procedures().Deployment(ctx)
		return d, err == nil
	}
	if len(mods) > 1 {
		if dep, err := s.c.Procedures().Deployment(ctx); err == nil && dep.ClusterVersion >= sqlDropTogetherVersion {
			d, err := s.c.deployCall(ctx, "sql drop "+strings.Join(mods, ", "), wire.ClusterConfigArgs{Cmd: wire.ConfigRemoveModule, Modules: mods})
			if err != nil {
				var ok bool
				if d, ok = removed(mods); !ok {
					return out, sqlErr(err)
				}
			}
			out.Dropped, out.Deployment = mods, d
			return out, nil
		}
	}
	for _, m := range mods {
		d, err := s.c.Procedures().RemoveModule(ctx, m)
		if err != nil {
			var ok bool
			if d, ok = removed([]string{m}); !ok {
				return out, sqlErr(err)
			}
		}
		out.Dropped, out.Deployment = append(out.Dropped, m), d
	}
	return out, nil
}
