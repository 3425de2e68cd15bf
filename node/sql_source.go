package node

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// The source commands of SQL (docs/sources.md, "CREATE SOURCE"), answered like the other
// SQL commands (sql.go) from the node's applied state: CREATE SOURCE compiled against the
// catalogue and the replicated streams, as the "source" module to deploy; DROP SOURCE as
// the modules to remove; SHOW SOURCES as rows.

// sourceAnswer answers a CREATE SOURCE, DROP SOURCE or SHOW SOURCES.
func (n *Node) sourceAnswer(cmd sql.Command, catalog []plan.Schema) (wire.SQLResult, error) {
	srcs := n.fsm.Sources()
	deployed := func(name string) bool {
		return slices.ContainsFunc(srcs, func(s replica.SourceModule) bool { return s.Source.Name == name })
	}
	switch cmd.Kind {
	case sql.CmdCreateSource:
		src, err := sql.CompileSource(cmd.Text, sql.SourceOptions{Catalog: catalog, Exists: n.streamExists, Deployed: deployed})
		if err != nil {
			return wire.SQLResult{}, err
		}
		if v := n.fsm.Deployment().Effective(); v < replica.VersionSources {
			return wire.SQLResult{}, &sql.Error{Kind: sql.ErrUnsupported, Msg: fmt.Sprintf(
				"CREATE SOURCE needs cluster version %d, the cluster runs %d (lockstep cluster upgrade %d)", replica.VersionSources, v, replica.VersionSources)}
		}
		b, err := src.Encode()
		if err != nil {
			return wire.SQLResult{}, err
		}
		return wire.SQLResult{Kind: wire.SQLDeploy, Module: src.ModuleName(), Source: b, ModuleKind: replica.ModuleKindSource}, nil
	case sql.CmdDropSource:
		res := wire.SQLResult{Kind: wire.SQLDrop}
		for _, name := range cmd.Names {
			if !deployed(name) {
				return wire.SQLResult{}, &sql.Error{Kind: sql.ErrUnknown, Msg: fmt.Sprintf("DROP SOURCE %s: no source of that name is deployed", name)}
			}
			res.Modules = append(res.Modules, plan.SourceModulePrefix+name)
		}
		return res, nil
	}
	res := wire.SQLResult{Kind: wire.SQLRows, Rows: [][]any{}}
	for _, c := range []string{"name", "stream", "connector", "topic", "brokers", "format", "dead_letter", "session_timeout_ms"} {
		t := "text"
		if c == "session_timeout_ms" {
			t = "bigint"
		}
		res.Columns = append(res.Columns, wire.SQLColumn{Name: c, Type: t})
	}
	for _, m := range srcs {
		s := m.Source
		res.Rows = append(res.Rows, []any{s.Name, s.Stream, s.Connector, s.Topic, strings.Join(s.Brokers, ","), s.Format, s.DeadLetter, s.SessionTimeoutMs})
	}
	slices.SortFunc(res.Rows, func(a, b []any) int { return strings.Compare(a[0].(string), b[0].(string)) })
	return res, nil
}
