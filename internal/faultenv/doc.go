// Package faultenv reads the test-only environment variables through which the
// fault-injection harness (jepsen/, `lockstep jepsen`) makes a `lockstep node` process
// inject faults, and builds the hooks they ask for. A node started with one of them logs
// a warning: they exist to inject faults, never for production.
//
// Its duties:
//
//  1. Name the variables once (RaftRoutes, ClockFile, CrashStore), for the node that
//     reads them and the harness that sets them.
//  2. Parse them (Read) into Hooks: a dial function that routes Raft connections through
//     the harness's proxies, a clock offset by a file, and whether the Raft log must lose
//     unsynced writes at a crash; a malformed value is an error naming the variable.
//  3. Open that crash model in a data directory (OpenCrashLog): raft-wal on a file system
//     that keeps only durable images, or a journal standing in for bolt.
//
// The caller (node/runner, so every node binary) puts the hooks into the node's
// configuration and closes the crash log after the node has stopped.
package faultenv
