// Command upgradeapp is one application in three builds, the sides of rolling upgrades
// (docs/operations.md, Upgrading a cluster): a custom node binary (node/runner) whose
// procedure "score.add" changes its logic between builds A and B, and whose build C adds a
// processor.
//
//   - Build A, the old one (go build -tags lockstep_upgrade_old): score.add@1 only, and it
//     runs cluster versions up to one below this Lockstep's newest, as a binary of the
//     previous release would.
//   - Build B, the new one (the default build): score.add@1 and score.add@2, and every
//     cluster version this Lockstep runs.
//   - Build C, the next one (go build -tags lockstep_upgrade_next): build B and the
//     processor plays.count@1, which counts the records of stream "plays" per key into
//     table "plays", with plays.get@1, a read-only procedure that returns a key's count.
//
// The tags select exactly one build: lockstep_upgrade_old wins over lockstep_upgrade_next
// (old.go, new.go and next.go carry complementary build lines; scorev2.go is B's and C's).
//
// A cluster of build A is rolled to build B one node at a time while it serves, then moved
// to the new cluster version and switched to score.add@2 at one log index:
//
//	lockstep cluster restart-plan --execute --restart-cmd '...' --upgrade 2 --activate score.add@2
//
// tests/system's TestRollingUpgradeProcesses does exactly that under load. A cluster of
// build B at cluster version 3 (where the engine runs only the active processors, so a
// binary may carry one the cluster does not run) is rolled to build C the same way, and the
// new processor and its procedure are added at one log index:
//
//	lockstep cluster restart-plan --execute --restart-cmd '...'
//	lockstep deploy activate processor:plays.count@1 plays.get@1
//
// tests/system's TestRollingAddProcessor does that under load. Run a node as "lockstep
// node" runs one:
//
//	upgradeapp node --certs-dir certs --id n1 --data /tmp/u1 --bootstrap n1=127.0.0.1:7001=127.0.0.1:8001
//
// A new registration of build B (a procedure's next version) goes into scorev2.go's
// registerScoreV2 and its activation into the test's list of activations; one of build C
// into next.go's newBuild.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockstepdb/lockstep/node/runner"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/urfave/cli/v2"
)

// ScoreArgs are the arguments of score.add: none, the key is the player.
type ScoreArgs struct{}

// ScoreResult is score.add's result: the version of the code that ran, and the key's
// score after it.
type ScoreResult struct {
	Version int   `msgpack:"version"`
	Score   int64 `msgpack:"score"`
}

// points is what version v of score.add adds: version 2 is the changed rule.
func points(v int) int64 {
	if v == 2 {
		return 10
	}
	return 1
}

// scoreAdd is version v of score.add: it adds its points to the key's score in table
// "scores" and returns the new score with its version, so a caller sees which code ran.
func scoreAdd(v int) func(tx *partition.Tx, _ ScoreArgs) (ScoreResult, error) {
	return func(tx *partition.Tx, _ ScoreArgs) (ScoreResult, error) {
		var n int64
		if b, ok := tx.Get("scores", tx.Key()); ok {
			fmt.Sscan(string(b), &n)
		}
		n += points(v)
		if err := tx.Put("scores", tx.Key(), []byte(fmt.Sprint(n))); err != nil {
			return ScoreResult{}, err
		}
		return ScoreResult{Version: v, Score: n}, nil
	}
}

// registry is the build's procedure set: the built-ins, score.add@1, and what the build
// adds (old.go, new.go).
func registry(string) *procedures.Registry {
	r := procedures.Builtins()
	procedures.MustRegister(r, "score.add", scoreAdd(1),
		procedures.Doc("key: player; adds a point to the player's score; returns the code's version and the score"))
	newBuild(r)
	return r
}

func main() {
	app := runner.App(registry)
	app.Usage = "a Lockstep node with score.add, build " + build
	// The node command of runner.Command, with the build's newest cluster version.
	app.Commands[0].Action = func(c *cli.Context) error {
		cfg, err := runner.ConfigFromFlags(c)
		if err != nil {
			return err
		}
		cfg.Node.Replica.MaxClusterVersion = maxClusterVersion
		return runner.Run(c.Context, cfg, registry)
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, filepath.Base(os.Args[0])+":", strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
		os.Exit(1)
	}
}
