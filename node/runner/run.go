package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
)

// Registry returns the procedure set of the node with the given id. Every node of a
// cluster must have the same procedures (node.Start); the id is for tests that make one
// node differ on purpose.
type Registry func(nodeID string) *procedures.Registry

// Run starts the node of cfg with the procedures reg returns for its id (nil: the
// built-ins) and runs it until SIGINT or SIGTERM or the end of ctx, then shuts it down
// cleanly; it returns the error of the start or of the shutdown. Meanwhile SIGHUP reloads
// the node's certificates (a failed reload is logged and the old ones kept), and when the
// node announces its automatic rebuild it is closed and started again on its rebuilt data
// directory (docs/operations.md, "Automatic rebuild of a divergent replica"). With
// cfg.Pprof it serves Go's profiler there. The test-only fault-injection variables of the
// environment (internal/faultenv), if any is set, are applied to the node's configuration,
// and in a build with the lockstep_nondet tag (tests only) the registry gets
// procedures.RegisterTestProcedures' procedure too.
func Run(ctx context.Context, cfg Config, reg Registry) error {
	ncfg := cfg.Node
	if ncfg.Logger == nil {
		ncfg.Logger = slog.Default()
	}
	crash, err := applyFaultEnv(&ncfg, os.Getenv)
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
	prof, err := startPprof(cfg.Pprof, ncfg.Logger)
	if err != nil {
		return err
	}
	defer prof.close()
	r := registry(reg, ncfg.ID)
	n, err := node.Start(ncfg, r)
	if err != nil {
		return err
	}
	ncfg.Logger.Info("node started", "id", ncfg.ID, "client", n.ClientAddr(), "raft", n.RaftAddr(), "admin", n.AdminAddr(),
		"client_listen", n.ClientListenAddr(), "admin_listen", n.AdminListenAddr(), "probe", n.ProbeAddr(), "insecure", n.Insecure())
	for {
		select {
		case <-n.RebuildRequested():
			if n, err = rebuildNode(n, &ncfg, r); err != nil {
				return err
			}
		case <-hup:
			if err := n.ReloadCerts(); err != nil {
				ncfg.Logger.Error("certificate reload failed; keeping the current certificates", "err", err)
			}
		case s := <-sig:
			ncfg.Logger.Info("shutting down", "signal", s.String())
			return n.Close()
		case <-ctx.Done():
			ncfg.Logger.Info("shutting down", "reason", context.Cause(ctx).Error())
			return n.Close()
		}
	}
}

// registry is the procedure set of node id: reg's (the built-ins without reg), and in a
// build with the lockstep_nondet tag (tests only) a procedure that breaks determinism on
// purpose.
func registry(reg Registry, id string) *procedures.Registry {
	var r *procedures.Registry
	if reg != nil {
		r = reg(id)
	}
	if r == nil {
		r = procedures.Builtins()
	}
	procedures.RegisterTestProcedures(r, id)
	return r
}

// ParsePeers reads entries "id=raftaddr=clientaddr" (a flag's, already split at commas,
// as --bootstrap's and restore's --members) into peers; a bad entry is an error naming it
// as a kind ("bootstrap peer", "member").
func ParsePeers(kind string, entries []string) ([]node.Peer, error) {
	var peers []node.Peer
	for _, part := range entries {
		f := strings.Split(strings.TrimSpace(part), "=")
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return nil, fmt.Errorf("%s %q: want ID=RAFTADDR=CLIENTADDR", kind, part)
		}
		peers = append(peers, node.Peer{ID: f[0], RaftAddr: f[1], ClientAddr: f[2]})
	}
	return peers, nil
}

// NewLogger is the logger of --log-format (text or json) and --log-level (debug, info,
// warn or error), writing to stderr.
func NewLogger(format, level string) (*slog.Logger, error) {
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
