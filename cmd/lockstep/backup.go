package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/backup"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/node/runner"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/urfave/cli/v2"
)

func backupCommand() *cli.Command {
	return &cli.Command{
		Name:  "backup",
		Usage: "write a backup of the cluster's whole replicated state at one log index (admin role)",
		Description: `Asks the node at the first --addr for a snapshot of its applied state — partitions,
streams, sessions, consumer groups, users, the cluster configuration, the cluster version and
the active registrations — taken at one log index while writes go on, and writes it to
--out with a header (index, cluster id, cluster version, node, time) and a SHA-256 over the
whole. The file is written to OUT.tmp, checked, then renamed: OUT is whole or absent.
--timeout bounds each request; the backup as a whole takes as long as it takes.
Restore it with "lockstep restore". Step by step: docs/operations.md, "Backup and restore".`,
		Flags: withClientFlags(
			&cli.StringFlag{Name: "out", Usage: "the backup file to write (must not exist)", Required: true},
			outputFlag(outputTable),
		),
		Action: runBackup,
	}
}

func runBackup(c *cli.Context) error {
	out := c.String("out")
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("--out %s exists: give a new file", out)
	}
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	var info client.BackupInfo
	if err := backup.WriteFile(out, func(w io.Writer) (err error) {
		info, err = cl.Cluster().Backup(c.Context, c.StringSlice("addr")[0], w)
		return err
	}); err != nil {
		return err
	}
	if c.String("output") == outputJSON {
		return writeJSON(c.App.Writer, info)
	}
	fmt.Fprintf(c.App.Writer, "backup of cluster %s at index %d (cluster version %d) from node %s: %s, %d bytes, sha256 %s\n",
		info.ClusterID, info.Index, info.ClusterVersion, info.Node, out, info.Bytes, info.SHA256)
	return nil
}

func restoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "make the data directory of one node of a new cluster from a backup (offline)",
		ArgsUsage: "FILE",
		Description: `Checks FILE's checksum and state hashes, and writes into --data-dir (empty or absent)
the backup's state as node --id of a new cluster whose voters are --members. Run it once
for each new node, with the same FILE, --members and --cluster-id; then start each node
as after a restart — no --bootstrap, no --join:
  lockstep node --id ID --data DIR --cluster-id NEWID --partitions P --raft RAFT --client CLIENT ...
with the addresses --members gives it and the source's partition count P (the command
prints it). The nodes elect a leader and go on from the
backup's index. The new cluster needs a new --cluster-id, unless --same-id keeps the
backup's (for a cluster that replaces the source, whose nodes are gone).

Example, three new nodes, on each of them:
  lockstep restore backup.lsb --id n1 --data-dir /var/lib/lockstep/n1 --cluster-id prod-2 \
    --members n1=10.0.0.1:7001=10.0.0.1:7000,n2=10.0.0.2:7001=10.0.0.2:7000,n3=10.0.0.3:7001=10.0.0.3:7000`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data-dir", Aliases: []string{"data"}, Usage: "the new node's data directory (empty or absent)", Required: true},
			&cli.StringFlag{Name: "id", Usage: "the new node's id, one of --members", Required: true},
			&cli.StringSliceFlag{Name: "members", Usage: "the new cluster's voters, ID=RAFTADDR=CLIENTADDR,...", Required: true},
			&cli.StringFlag{Name: "cluster-id", Usage: "the new cluster's id (required unless --same-id)"},
			&cli.BoolFlag{Name: "same-id", Usage: "keep the backup's cluster id"},
			outputFlag(outputTable),
		},
		Action: runRestore,
	}
}

func runRestore(c *cli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("restore: want one backup FILE, got %d arguments", c.NArg())
	}
	members, err := runner.ParsePeers("member", c.StringSlice("members"))
	if err != nil {
		return err
	}
	log, err := newLogger("text", "warn")
	if err != nil {
		return err
	}
	cfg := node.Config{ID: c.String("id"), DataDir: c.String("data-dir"), ClusterID: c.String("cluster-id"), Logger: log}
	res, err := node.Restore(cfg, procedures.Builtins(), c.Args().First(), members, c.Bool("same-id"))
	if errors.Is(err, backup.ErrBadBackup) {
		return fmt.Errorf("refusing the backup: %w", err)
	} else if err != nil {
		return err
	}
	if c.String("output") == outputJSON {
		return writeJSON(c.App.Writer, restoreJSON{Node: cfg.ID, DataDir: cfg.DataDir, ClusterID: res.ClusterID,
			Partitions: res.Backup.Partitions, Backup: res.Backup})
	}
	fmt.Fprintf(c.App.Writer, "restored %s (cluster %s, index %d) into %s as node %s of cluster %s; start it with --id %s --data %s --cluster-id %s --partitions %d and its addresses in --members\n",
		c.Args().First(), res.Backup.ClusterID, res.Backup.Index, cfg.DataDir, cfg.ID, res.ClusterID, cfg.ID, cfg.DataDir, res.ClusterID, res.Backup.Partitions)
	return nil
}

// restoreJSON is the output of `restore --output json`: the node made, and the backup's
// header.
type restoreJSON struct {
	Node       string        `json:"node"`
	DataDir    string        `json:"data_dir"`
	ClusterID  string        `json:"cluster_id"`
	Partitions int           `json:"partitions"`
	Backup     backup.Header `json:"backup"`
}
