package runner

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/internal/faultenv"
	"github.com/lockstepdb/lockstep/node"
)

// TestApplyFaultEnv checks that the harness's test-only variables reach the node's
// configuration: a malformed value (each kind is internal/faultenv's TestRead) is an error
// naming the variable and changes nothing; good ones set the hooks and the crash model of
// the configured log store.
func TestApplyFaultEnv(t *testing.T) {
	clock := filepath.Join(t.TempDir(), "clock")
	for i, tc := range []struct {
		env     map[string]string
		store   string // --log-store
		wantErr string
	}{
		{env: map[string]string{}},
		{env: map[string]string{faultenv.RaftRoutes: "127.0.0.1:1=127.0.0.1:2"}},
		{env: map[string]string{faultenv.ClockFile: clock}},
		{env: map[string]string{faultenv.RaftRoutes: "127.0.0.1:1"}, wantErr: faultenv.RaftRoutes},
		{env: map[string]string{faultenv.CrashStore: "yes", faultenv.ClockFile: clock}, wantErr: faultenv.CrashStore},
		{env: map[string]string{faultenv.CrashStore: "1"}},
		{env: map[string]string{faultenv.CrashStore: "1"}, store: node.LogStoreBolt},
		{env: map[string]string{faultenv.CrashStore: "1"}, store: node.LogStoreWAL},
	} {
		cfg := node.Config{Logger: slog.New(slog.DiscardHandler), DataDir: t.TempDir()}
		cfg.Sequencer.LogStoreKind = tc.store
		kind := tc.store
		if kind == "" {
			kind = node.DefaultLogStore
		}
		crash, err := applyFaultEnv(&cfg, func(k string) string { return tc.env[k] })
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("#%d: got %v, want an error with %q", i, err, tc.wantErr)
		case tc.wantErr != "" && (cfg.Sequencer.Dial != nil || cfg.Sequencer.Now != nil):
			t.Errorf("#%d: a bad value set a hook", i)
		case tc.wantErr == "" && err != nil:
			t.Errorf("#%d: %v", i, err)
		case tc.wantErr == "" && (cfg.Sequencer.Dial != nil) != (tc.env[faultenv.RaftRoutes] != ""):
			t.Errorf("#%d: dial hook %v", i, cfg.Sequencer.Dial != nil)
		case tc.wantErr == "" && (cfg.Sequencer.Now != nil) != (tc.env[faultenv.ClockFile] != ""):
			t.Errorf("#%d: clock hook %v", i, cfg.Sequencer.Now != nil)
		case (cfg.Sequencer.LogStore != nil) != (tc.env[faultenv.CrashStore] == "1" && kind == node.LogStoreBolt):
			t.Errorf("#%d: crash journal %v", i, cfg.Sequencer.LogStore != nil)
		case (cfg.Sequencer.WALFileSystem != nil) != (tc.env[faultenv.CrashStore] == "1" && kind == node.LogStoreWAL):
			t.Errorf("#%d: crash file system for raft-wal %v", i, cfg.Sequencer.WALFileSystem != nil)
		}
		crash.Close()
	}
	// The crash store lives in the data directory: without one it is refused.
	cfg := node.Config{Logger: slog.New(slog.DiscardHandler)}
	crash, err := applyFaultEnv(&cfg, func(k string) string { return map[string]string{faultenv.CrashStore: "1"}[k] })
	if err == nil || !strings.Contains(err.Error(), "no data directory") || cfg.Sequencer.LogStore != nil || crash != nil {
		t.Errorf("crash store without a data directory: %v, log store %v", err, cfg.Sequencer.LogStore != nil)
	}
}

// TestCrashStoreKeepsJournal: a data directory that holds the crash journal (bolt's crash
// model) keeps it when no log store is named, and refuses --log-store wal with a clear
// error instead of starting an empty raft-wal log beside it.
func TestCrashStoreKeepsJournal(t *testing.T) {
	env := func(k string) string { return map[string]string{faultenv.CrashStore: "1"}[k] }
	for _, store := range []string{"", node.LogStoreWAL} {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "crashstore"), 0o700); err != nil {
			t.Fatal(err)
		}
		cfg := node.Config{Logger: slog.New(slog.DiscardHandler), DataDir: dir}
		cfg.Sequencer.LogStoreKind = store
		crash, err := applyFaultEnv(&cfg, env)
		journal := cfg.Sequencer.LogStore != nil
		crash.Close()
		switch {
		case cfg.Sequencer.WALFileSystem != nil:
			t.Errorf("store %q: raft-wal on the crash file system beside the journal", store)
		case store == "" && (err != nil || !journal):
			t.Errorf("store %q: %v, journal %v; want the journal kept", store, err, journal)
		case store == node.LogStoreWAL && (err == nil || !strings.Contains(err.Error(), "crash journal") || journal):
			t.Errorf("store %q: %v, journal %v; want an error naming the journal", store, err, journal)
		}
	}
}
