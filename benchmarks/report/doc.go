// Package report turns the nodes' Prometheus metrics into what a benchmark run reports
// beside its client-side latencies: how the sequencer batched the inputs
// (lockstep_batch_items) and where each commit round's time went, stage by stage
// (lockstep_commit_stage_seconds, lockstep_replication_rpc_seconds,
// lockstep_apply_seconds). lockstep bench prints both.
//
// Its duties:
//
//  1. Read every node's metrics: from admin /metrics endpoints (AdminSource) or from an
//     embedded cluster's registries (GatherSource).
//  2. Scrape once when the warm-up ends and once when the run ends (Watch).
//  3. Report the difference: Batches (the batch-size distribution) and Round (each
//     stage's count, mean and p99, added up over the nodes).
//  4. Make the whole run's report with the load generator's measurement (NewBench): its
//     text, JSON and chart, as lockstep bench prints them.
//
// Usage:
//
//	stop := report.Watch(report.AdminSource(addrs, tlsCfg), warmup)
//	... run the load ...
//	batches, round := stop()
//	round.WriteText(w)
//
// The metric names are node's exported constants (node.MetricBatchItems, ...), so the
// node and this reader share one contract.
package report
