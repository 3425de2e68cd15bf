// Package sqltest runs a compiled SQL deployment on a replica FSM in process, for the
// tests of the SQL layer and of what reads its views (client/pgsink's typed mode): no
// Raft, no network, entries applied in the grouping the test chooses.
//
// Duties:
//  1. Run the plan a replica runs: the artifact's plan is encoded and decoded (sql.Load)
//     before it is registered, as the log carries it.
//  2. Create the deployment's streams in the first entry.
//  3. Apply entries (stream.append items of encoded rows, ticks) as Raft log entries, and
//     fail the test on any item that failed.
//  4. Read back a view's rows (decoded with its schema) and a stream's records.
//
// Usage:
//
//	h := sqltest.New(t, 4, script)
//	h.Insert("INSERT INTO clicks VALUES ('u1', '/a', '2024-01-01 00:00:00', 1)")
//	h.Tick(1000)
//	rows := h.View("per_page")
//
// Contract: a Harness belongs to one test goroutine; its FSM is closed when the test ends.
package sqltest
