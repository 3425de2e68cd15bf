package node

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// SQL commands (wire.OpSQL; docs/sql.md, "How a query is deployed"). The node reads its
// applied state at the consistency the request asks (the leader off the log by default),
// then answers from it: a SELECT, SHOW or EXPLAIN with rows; a CREATE compiled against
// the catalogue of the deployed SQL modules, with Exists answered from the replicated
// streams, as the module to deploy; a DROP as the modules to remove; an INSERT as the
// records to append. Nothing here changes state: the client deploys, removes (both
// OpClusterConfig, admin, checked again by the leader and by every replica on apply) and
// appends (its exactly-once session) itself. A default-consistency Exec is served by the
// leader, so the leader compiles what is deployed.

// sqlCommand serves OpSQL.
func (cc *clientConn) sqlCommand(req *wire.Request) {
	n, id := cc.n, req.ID
	var a wire.SQLArgs
	if err := msgpack.Unmarshal(req.Args, &a); err != nil {
		cc.fail(id, fmt.Errorf("%w: sql command: %w", wire.ErrMalformed, err))
		return
	}
	answer := func() {
		if err := n.ready(); err != nil {
			cc.fail(id, err)
			return
		}
		res, err := n.sqlAnswer(a.Text)
		if err != nil {
			cc.fail(id, fmt.Errorf("%w: %w", wire.ErrBadArguments, err))
			return
		}
		v, err := msgpack.Marshal(&res)
		if err != nil {
			cc.fail(id, err)
			return
		}
		cc.reply(&wire.Response{ID: id, Value: v})
	}
	if err := n.ready(); err != nil {
		cc.fail(id, err)
		return
	}
	switch req.Consistency {
	case wire.ConsistencyAny:
		go answer() // compiling runs the parser: off the connection's goroutine
	case wire.ConsistencyBounded:
		maxLag := time.Duration(req.MaxLag)
		if n.fresh(maxLag) {
			go answer()
			return
		}
		n.freshness.queue.add(func(err error) {
			if err == nil && !n.fresh(maxLag) {
				err = fmt.Errorf("%w: node %s cannot show its state is within %v of the leader's", wire.ErrNotReady, n.cfg.ID, maxLag)
			}
			if err != nil {
				cc.fail(id, err)
				return
			}
			go answer()
		})
	default:
		if err := n.leaderReady(); err != nil {
			cc.fail(id, err)
			return
		}
		n.readIndex(func(_ uint64, err error) {
			if err != nil {
				cc.fail(id, err)
				return
			}
			go answer()
		})
	}
}

// sqlAnswer answers the SQL command text from this node's applied state.
func (n *Node) sqlAnswer(text string) (wire.SQLResult, error) {
	cmd, err := sql.ParseCommand(text)
	if err != nil {
		return wire.SQLResult{}, err
	}
	mods := n.fsm.SQLModules()
	var catalog []plan.Schema
	for _, m := range mods {
		catalog = append(catalog, m.Plan.Schemas()...)
	}
	switch cmd.Kind {
	case sql.CmdCreateSource, sql.CmdDropSource, sql.CmdShowSources:
		return n.sourceAnswer(cmd, catalog)
	case sql.CmdDeploy:
		art, err := sql.Compile(text, sql.Options{Catalog: catalog, Exists: n.streamExists, PlanVersion: replica.SQLPlanVersion(n.fsm.Deployment().Effective())})
		if err != nil {
			return wire.SQLResult{}, err
		}
		b, err := art.Encode()
		if err != nil {
			return wire.SQLResult{}, err
		}
		src, err := replica.EncodeSQLSource(text, b)
		if err != nil {
			return wire.SQLResult{}, err
		}
		return wire.SQLResult{Kind: wire.SQLDeploy, Module: art.ModuleName(), Source: src}, nil
	case sql.CmdInsert:
		recs, err := sql.EncodeInsert(text, catalog)
		if err != nil {
			return wire.SQLResult{}, err
		}
		res := wire.SQLResult{Kind: wire.SQLInsert}
		for _, r := range recs {
			res.Appends = append(res.Appends, wire.SQLAppend{Stream: r.Stream, Key: r.Key, Value: r.Value, EventTimeMs: r.EventTimeMs})
		}
		return res, nil
	case sql.CmdQuery:
		q, err := sql.CompileQuery(text, catalog)
		if err != nil {
			return wire.SQLResult{}, err
		}
		var parts []plan.Scanner
		for _, p := range n.fsm.Engine().Partitions() {
			parts = append(parts, p)
		}
		rows, err := q.Run(parts)
		if err != nil {
			return wire.SQLResult{}, err
		}
		res := wire.SQLResult{Kind: wire.SQLRows, Rows: rows}
		for _, c := range q.Columns {
			res.Columns = append(res.Columns, wire.SQLColumn{Name: c.Name, Type: c.Type.String()})
		}
		if res.Rows == nil {
			res.Rows = [][]any{}
		}
		return res, nil
	case sql.CmdDrop:
		ms, err := dropModules(mods, cmd.Names, cmd.IfExists)
		if err != nil {
			return wire.SQLResult{}, err
		}
		return wire.SQLResult{Kind: wire.SQLDrop, Modules: ms}, nil
	case sql.CmdShow:
		if len(cmd.Names) == 1 {
			return showSchema(mods, cmd.Names[0])
		}
		return showRows(mods, cmd.Show), nil
	case sql.CmdExplain:
		var p *plan.Plan
		if len(cmd.Names) == 1 {
			for _, m := range mods {
				if slices.ContainsFunc(m.Plan.Schemas(), func(s plan.Schema) bool { return s.Name == cmd.Names[0] }) {
					p = m.Plan
				}
			}
			if p == nil {
				return wire.SQLResult{}, &sql.Error{Kind: sql.ErrUnknown, Msg: fmt.Sprintf("EXPLAIN %s: no stream, table or view of that name is deployed", cmd.Names[0])}
			}
		} else {
			art, err := sql.Compile(cmd.Text, sql.Options{Catalog: catalog, Exists: n.streamExists, PlanVersion: replica.SQLPlanVersion(n.fsm.Deployment().Effective())})
			if err != nil {
				return wire.SQLResult{}, err
			}
			p = art.Plan
		}
		res := wire.SQLResult{Kind: wire.SQLRows, Columns: []wire.SQLColumn{{Name: "plan", Type: "text"}}}
		for _, line := range strings.Split(strings.TrimRight(p.Explain(), "\n"), "\n") {
			res.Rows = append(res.Rows, []any{line})
		}
		return res, nil
	}
	return wire.SQLResult{}, fmt.Errorf("sql: command kind %d", cmd.Kind)
}

// streamExists is sql.Options.Exists: a stream of the replicated state (every partition
// holds the same definitions).
func (n *Node) streamExists(name string) bool {
	_, ok := n.fsm.Engine().Partitions()[0].StreamInfo(name)
	return ok
}

// dropModules returns the SQL modules a DROP of names removes, views' modules first: each
// name must be deployed (with ifExists, one that is not is skipped), the names must cover
// every relation and view of their modules (a module is deployed and removed whole), and
// no view outside them may read them.
func dropModules(mods []replica.SQLModule, names []string, ifExists bool) ([]string, error) {
	drop := map[string]bool{}
	owner := map[string]string{}
	for _, m := range mods {
		for _, s := range m.Plan.Schemas() {
			owner[s.Name] = m.Name
		}
	}
	if ifExists {
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return owner[n] == "" })
	}
	for _, name := range names {
		m, ok := owner[name]
		if !ok {
			return nil, &sql.Error{Kind: sql.ErrUnknown, Msg: fmt.Sprintf("DROP %s: no stream, table or view of that name is deployed", name)}
		}
		drop[m] = true
	}
	var out []string
	for _, m := range mods {
		if !drop[m.Name] {
			for _, v := range m.Plan.Views {
				reads := []string{v.Input.Name}
				if v.Join != nil {
					reads = append(reads, v.Join.Table.Name)
				}
				for _, r := range reads {
					if drop[owner[r]] {
						return nil, &sql.Error{Kind: sql.ErrDefinition, Msg: fmt.Sprintf("DROP %s: view %s reads it: drop %s first", r, v.Name, v.Name)}
					}
				}
			}
			continue
		}
		for _, s := range m.Plan.Schemas() {
			if !slices.Contains(names, s.Name) {
				return nil, &sql.Error{Kind: sql.ErrDefinition, Msg: fmt.Sprintf(
					"DROP: %s was deployed in one script with %s (module %s): drop them together", strings.Join(names, ", "), s.Name, m.Name)}
			}
		}
		out = append(out, m.Name)
	}
	return readersFirst(mods, out, owner), nil
}

// readersFirst orders the modules names so that a module whose views read another's
// relations or views comes before it: each removal then finds no reader left.
func readersFirst(mods []replica.SQLModule, names []string, owner map[string]string) []string {
	reads := map[string]map[string]bool{} // module → the modules it reads
	for _, m := range mods {
		for _, v := range m.Plan.Views {
			in := []string{v.Input.Name}
			if v.Join != nil {
				in = append(in, v.Join.Table.Name)
			}
			for _, r := range in {
				if o := owner[r]; o != "" && o != m.Name {
					if reads[m.Name] == nil {
						reads[m.Name] = map[string]bool{}
					}
					reads[m.Name][o] = true
				}
			}
		}
	}
	var out []string
	left := slices.Clone(names)
	for len(left) > 0 {
		for i, m := range left {
			read := false // is m read by another module still to remove?
			for _, o := range left {
				if reads[o][m] {
					read = true
				}
			}
			if !read {
				out = append(out, m)
				left = slices.Delete(left, i, i+1)
				break
			}
			if i == len(left)-1 { // a cycle cannot be deployed; keep the rest as they are
				return append(out, left...)
			}
		}
	}
	return out
}

// showRows lists the deployed relations or views of kind.
func showRows(mods []replica.SQLModule, kind plan.Kind) wire.SQLResult {
	res := wire.SQLResult{Kind: wire.SQLRows, Columns: []wire.SQLColumn{{Name: "name", Type: "text"}, {Name: "columns", Type: "text"}, {Name: "module", Type: "text"}}, Rows: [][]any{}}
	for _, m := range mods {
		for _, s := range m.Plan.Schemas() {
			if s.Kind != kind {
				continue
			}
			var cols []string
			for _, c := range s.Columns {
				cols = append(cols, c.Name+" "+c.Type.String())
			}
			res.Rows = append(res.Rows, []any{s.Name, strings.Join(cols, ", "), m.Name})
		}
	}
	slices.SortFunc(res.Rows, func(a, b []any) int { return strings.Compare(a[0].(string), b[0].(string)) })
	return res
}
