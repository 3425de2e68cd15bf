package runner

import (
	"fmt"

	"github.com/lockstepdb/lockstep/internal/faultenv"
	"github.com/lockstepdb/lockstep/node"
)

// applyFaultEnv puts the fault hooks getenv asks for (internal/faultenv, test-only) into
// cfg, warning in cfg's log for each. It returns the crash model of the Raft log when one
// was asked for (close it after the node), and an error naming the variable when a value
// is malformed, leaving cfg unchanged then.
func applyFaultEnv(cfg *node.Config, getenv func(string) string) (*faultenv.CrashLog, error) {
	h, err := faultenv.Read(getenv)
	if err != nil {
		return nil, err
	}
	var crash *faultenv.CrashLog
	if h.Crash {
		kind, err := crashStoreKind(cfg)
		if err == nil {
			crash, err = faultenv.OpenCrashLog(cfg.DataDir, kind == node.LogStoreWAL)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", faultenv.CrashStore, err)
		}
		if crash.FS != nil {
			cfg.Sequencer.LogStoreKind, cfg.Sequencer.WALFileSystem = node.LogStoreWAL, crash.FS
			cfg.Logger.Warn("fault injection: raft-wal on a file system that loses unsynced writes at a crash", "var", faultenv.CrashStore,
				"discarded_bytes", crash.FS.Discarded)
		} else {
			cfg.Sequencer.LogStore, cfg.Sequencer.StableStore = crash.Store, crash.Store
			cfg.Logger.Warn("fault injection: Raft log in a journal that loses unsynced writes at a crash (standing in for bolt)",
				"var", faultenv.CrashStore, "discarded_bytes", crash.Store.Discarded)
		}
	}
	if h.Dial != nil {
		cfg.Sequencer.Dial = h.Dial
		cfg.Logger.Warn("fault injection: Raft connections routed by the environment", "var", faultenv.RaftRoutes)
	}
	if h.Now != nil {
		cfg.Sequencer.Now = h.Now
		cfg.Logger.Warn("fault injection: batch clock offset by a file", "var", faultenv.ClockFile)
	}
	return crash, nil
}

// crashStoreKind is the log store the crash model applies to: the journal's (bolt) if the
// data dir holds one, else the configured store, else the one the data dir holds or the
// default.
func crashStoreKind(cfg *node.Config) (string, error) {
	if cfg.DataDir == "" {
		return "", fmt.Errorf("no data directory")
	}
	if faultenv.HasJournal(cfg.DataDir) {
		if cfg.Sequencer.LogStoreKind == node.LogStoreWAL {
			return "", fmt.Errorf("%s holds the crash journal (bolt), not a wal log", cfg.DataDir)
		}
		return node.LogStoreBolt, nil
	}
	if k := cfg.Sequencer.LogStoreKind; k != "" {
		return k, nil
	}
	return node.DataDirLogStore(cfg.DataDir)
}
