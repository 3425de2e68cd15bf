// Command lockstep runs Lockstep nodes, administers clusters and runs the embedded demo.
//
// It is an assembly script: each subcommand builds its components from flags, starts
// them, waits for a signal or for its work to end, and stops them in reverse order.
//
//	lockstep cert ...         create-ca, create-node, create-client, list: the certificates
//	lockstep node             run a node (config file, bootstrap, join, HTTP admin)
//	lockstep cluster ...      status, join, remove, transfer-leader, recover, restart-plan
//	lockstep invoke PROC      run a procedure with JSON arguments
//	lockstep procedures       list the procedures
//	lockstep processors       the stream processors per partition: position, lag, watermark
//	lockstep deploy ...       list, activate: the running versions of compiled-in procedures
//	lockstep stream ...       create, list, describe, delete, append, read, tail streams
//	lockstep put|get|del K    the kv built-ins: values in and out, JSON with --json / -o json
//	lockstep context ...      set, use, list, show, delete: named connection settings
//	lockstep backup --out F   a backup of the whole replicated state at one log index
//	lockstep restore F        a new cluster's data directory from a backup (offline)
//	lockstep sink postgres    copy a stream into a PostgreSQL table exactly once
//	lockstep demo             an embedded 3-node cluster under load, with failover
//	lockstep jepsen run       fault-injection run: workload, nemesis, history checkers
//	lockstep bench            load a cluster (or an embedded one): throughput, latency, batches
//	lockstep completion SHELL the shell completion script: bash, zsh or fish
//	lockstep --version        the binary's version, as nodes report it in their status
//
// Every command exits 0 on success, and non-zero with a one-line error on stderr: the
// code of exitcodes.go's table, which docs/cli.md documents.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/lockstepdb/lockstep/client/profile"
	"github.com/lockstepdb/lockstep/node"
	"github.com/urfave/cli/v2"
)

func main() {
	app := newApp()
	if err := app.Run(flagsFirst(app, os.Args)); err != nil {
		fmt.Fprintln(os.Stderr, "lockstep:", oneLine(err.Error()))
		os.Exit(exitCode(err))
	}
}

// newApp assembles the commands.
func newApp() *cli.App {
	app := &cli.App{
		Name:                 "lockstep",
		Usage:                "a replicated, deterministic-execution stream database",
		Version:              node.Version(), // --version; nodes report the same in their status
		EnableBashCompletion: true,
		// An empty connection variable means unset (before any command reads its flags).
		Before: func(*cli.Context) error { return profile.UnsetEmpty() },
		Commands: []*cli.Command{
			nodeCommand(),
			certCommand(),
			clusterCommand(),
			userCommand(),
			grantCommand(),
			revokeCommand(),
			invokeCommand(),
			proceduresCommand(),
			processorsCommand(),
			deployCommand(),
			sqlCommand(),
			backupCommand(),
			restoreCommand(),
			streamCommand(),
			sinkCommand(),
			sourceCommand(),
			groupCommand(),
			demoCommand(),
			jepsenCommand(),
			benchCommand(),
			putCommand(),
			getCommand(),
			delCommand(),
			contextCommand(),
			completionCommand(),
		},
	}
	prepareCommands(app.Commands)
	return app
}

// oneLine folds a multi-line error message (errors.Join makes them) into one line.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}
