package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lockstepdb/lockstep/node"
	"github.com/urfave/cli/v2"
)

func nodeCommand() *cli.Command {
	return &cli.Command{
		Name:  "node",
		Usage: "run one Lockstep node",
		Description: `Runs a node until SIGINT or SIGTERM, then shuts it down cleanly. To create a cluster,
start every initial node with the same --bootstrap list; later restarts need no
--bootstrap (the data dir remembers). A new node enters a running cluster with --join
(the client addresses of some members), or is admitted by "lockstep cluster join".
Every flag can also come from --config FILE (YAML or TOML, keys named like the flags);
flags given on the command line win. See docs/operations.md.

Every port speaks mutual TLS with the certificates of --certs-dir (ca.crt, node.crt,
node.key; make them with "lockstep cert"); SIGHUP reloads them. Without --certs-dir the
node refuses to start unless --insecure is given (development only; see docs/security.md).

Example, three nodes on one machine:
  lockstep node --certs-dir certs --id n1 --data /tmp/ls1 --raft 127.0.0.1:7001 --client 127.0.0.1:8001 --admin 127.0.0.1:9001 \
    --bootstrap n1=127.0.0.1:7001=127.0.0.1:8001,n2=127.0.0.1:7002=127.0.0.1:8002,n3=127.0.0.1:7003=127.0.0.1:8003
  (and the same for n2 and n3 with their own --id, --data, --raft, --client and --admin)

Example, a fourth node joining the running cluster, configured by a file:
  lockstep node --config n4.yaml --join 127.0.0.1:8001,127.0.0.1:8002`,
		Flags:  nodeFlags(),
		Action: runNode,
	}
}

func runNode(c *cli.Context) error {
	cfg, crash, err := nodeConfigFromFlags(c)
	if err != nil {
		return err
	}
	defer crash.Close()            // test-only (faultenv.go): closed after the node
	sig := make(chan os.Signal, 1) // a signal during start-up waits here
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	prof, err := startPprof(c.String("pprof"), cfg.Logger)
	if err != nil {
		return err
	}
	defer prof.close()
	reg := nodeRegistry(cfg.ID)
	n, err := node.Start(cfg, reg)
	if err != nil {
		return err
	}
	cfg.Logger.Info("node started", "id", cfg.ID, "client", n.ClientAddr(), "raft", n.RaftAddr(), "admin", n.AdminAddr(),
		"insecure", n.Insecure())
	for {
		select {
		case <-n.RebuildRequested():
			if n, err = rebuildNode(n, &cfg, reg); err != nil {
				return err
			}
		case <-hup:
			if err := n.ReloadCerts(); err != nil {
				cfg.Logger.Error("certificate reload failed; keeping the current certificates", "err", err)
			}
		case s := <-sig:
			cfg.Logger.Info("shutting down", "signal", s.String())
			return n.Close()
		}
	}
}

// parsePeers reads the entries "id=raftaddr=clientaddr" of --bootstrap (already split at
// commas by the flag) into bootstrap peers.
func parsePeers(entries []string) ([]node.Peer, error) {
	var peers []node.Peer
	for _, part := range entries {
		f := strings.Split(strings.TrimSpace(part), "=")
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return nil, fmt.Errorf("bootstrap peer %q: want ID=RAFTADDR=CLIENTADDR", part)
		}
		peers = append(peers, node.Peer{ID: f[0], RaftAddr: f[1], ClientAddr: f[2]})
	}
	return peers, nil
}

func newLogger(format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}
