/*
Package sql is Lockstep's SQL front end: it parses and plans continuous queries —
streams, tables and materialized views — into a versioned plan (package sql/plan) that
replicas run as stream processors. Parsing happens only at deploy time, on the node that
deploys; the log carries the SQL text and the encoded plan, and replicas decode and run
the plan, so a parser upgrade can never change a running query (DESIGN.md section 11).

Compile does, for a script of statements:

 1. parse it with PostgreSQL's own grammar (github.com/wasilibs/go-pgquery: libpg_query
    compiled to WebAssembly, run by wazero; pure Go), after blanking the two additions of
    the dialect (CREATE STREAM, EMIT ...) on the scanner's tokens (parse.go);
 2. turn CREATE STREAM and CREATE TABLE into schemas (ddl.go);
 3. plan each CREATE MATERIALIZED VIEW against the schemas defined so far and those of
    Options.Catalog: resolve columns, type-check every expression, find the aggregates and
    the window (view.go, group.go, exprs.go);
 4. validate the whole plan as a replica will (plan.Plan.Validate).

Any error is an *Error with a Kind (ErrSyntax, ErrUnknown, ErrType, ErrUnsupported,
ErrDefinition), a line and a column, and Compile then returns nothing: nothing can be
half-deployed. EncodeInsert turns INSERT ... VALUES statements into stream records in
the canonical row layout, for the caller to append.

Usage, on the deploying node and on every replica:

	art, err := sql.Compile(text, sql.Options{Catalog: deployedSchemas})
	payload, err := art.Encode()          // into the log, beside text
	...
	p, err := plan.Decode(payload)        // on apply, on every replica
	err = p.Register(registry)            // its processors; p.Streams() to create

In a cluster, a script is deployed as a module of kind "sql" (replica.SQLSource: the
text and the encoded plan in one deploy-module item): the leader compiles it against the
schemas of the deployed SQL modules, every replica decodes, registers and creates the
streams at the deploy's index. ParseCommand tells a user's command apart (CREATE,
INSERT, SELECT, DROP, SHOW, EXPLAIN) and SplitStatements splits a script, for the
client's SQL handle and lockstep sql.

The dialect and each operator's semantics are in docs/sql.md.
*/
package sql
