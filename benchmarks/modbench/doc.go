// Package modbench is one stream processor written twice, in Starlark and in Go, for the
// benchmark that compares them on real node processes (issue 22; benchmarks/RESULTS.md,
// "A Starlark module against Go on real nodes"):
//
//  1. MakeRecord generates the input: click records, a msgpack map {user, page, agent, ms},
//     keyed by user, with event times one millisecond apart.
//  2. The processor "modbench.count" on stream "modbench.clicks" decodes a record, drops
//     the bots (agent "bot..."), and counts the rest per page in a tumbling window of
//     WindowMs of event time: row "page@windowstart" of table "modbench.windows".
//  3. The read-only multi-partition procedure "modbench.total" returns one page of a
//     partition's rows: their counts' sum and their number. Expected predicts the sum
//     over every partition and the distinct page windows (each partition counts its own
//     records, so the rows are between those and Partitions times as many), so a run
//     checks that the processor did its work before its speed is believed.
//
// Source is the Starlark module (module.star, deployed through the log with
// Client.Procedures().DeployModule); RegisterGo registers the same logic as compiled-in
// Go code, which benchmarks/modbench/cmd/modbench-node carries (the product binary,
// `lockstep node`, does not). Package abrun runs the benchmark.
package modbench
