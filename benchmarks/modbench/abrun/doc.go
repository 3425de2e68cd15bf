// Package abrun runs the modbench benchmark on real node processes (issue 22;
// benchmarks/RESULTS.md, "A Starlark module against Go on real nodes"). One Run:
//
//  1. starts a cluster of Config.Nodes node processes on loopback (jepsen.Cluster, direct
//     network, mutual TLS with certificates made by the lockstep binary, fsync on as
//     always): `lockstep node` for EngineStarlark, modbench-node for EngineGo;
//  2. creates stream modbench.clicks and, for Starlark, deploys the module through the
//     log (Client.Procedures().DeployModule);
//  3. appends Config.Records records (or as many as Config.MaxAppend allows) from
//     Config.Workers clients in this process, in batches of Config.Batch;
//  4. waits until the processor has handled every appended record on every node;
//  5. checks the processor's result (modbench.total against modbench.Expected) and which
//     code ran (origin "module modbench vN" or "binary");
//  6. reports records/s from the first append to the last node drained, the node
//     processes' CPU seconds per record (/proc/PID/stat utime+stime), this process's
//     CPU, and the processor's lag when the appends ended.
//
// Pairs alternates the two engines (A B A B ...) so that a drift of a shared machine's
// speed falls on both.
package abrun
