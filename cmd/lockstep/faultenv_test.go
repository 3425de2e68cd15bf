package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/node"
)

// TestApplyFaultEnv checks the harness's test-only variables: malformed values are a
// clear error naming the variable and change nothing; good ones set the hooks.
func TestApplyFaultEnv(t *testing.T) {
	clock := filepath.Join(t.TempDir(), "clock")
	badClock := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(badClock, []byte("yesterday"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		env     map[string]string
		store   string // --log-store
		wantErr string
	}{
		{env: map[string]string{}},
		{env: map[string]string{envRaftRoutes: "127.0.0.1:1=127.0.0.1:2"}},
		{env: map[string]string{envClockFile: clock}},
		{env: map[string]string{envRaftRoutes: "127.0.0.1:1"}, wantErr: envRaftRoutes},
		{env: map[string]string{envRaftRoutes: "a=b,a=c"}, wantErr: "routed twice"},
		{env: map[string]string{envClockFile: badClock}, wantErr: envClockFile},
		{env: map[string]string{envCrashStore: "yes"}, wantErr: envCrashStore},
		{env: map[string]string{envCrashStore: "1"}},
		{env: map[string]string{envCrashStore: "1"}, store: node.LogStoreBolt},
		{env: map[string]string{envCrashStore: "1"}, store: node.LogStoreWAL},
	} {
		cfg := node.Config{Logger: slog.New(slog.DiscardHandler), DataDir: t.TempDir()}
		cfg.Sequencer.LogStoreKind = tc.store
		kind := tc.store
		if kind == "" {
			kind = node.DefaultLogStore
		}
		crashStore = nil
		err := applyFaultEnv(&cfg, func(k string) string { return tc.env[k] })
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("#%d: got %v, want an error with %q", i, err, tc.wantErr)
		case tc.wantErr != "" && (cfg.Sequencer.Dial != nil || cfg.Sequencer.Now != nil):
			t.Errorf("#%d: a bad value set a hook", i)
		case tc.wantErr == "" && err != nil:
			t.Errorf("#%d: %v", i, err)
		case tc.wantErr == "" && (cfg.Sequencer.Dial != nil) != (tc.env[envRaftRoutes] != ""):
			t.Errorf("#%d: dial hook %v", i, cfg.Sequencer.Dial != nil)
		case tc.wantErr == "" && (cfg.Sequencer.Now != nil) != (tc.env[envClockFile] != ""):
			t.Errorf("#%d: clock hook %v", i, cfg.Sequencer.Now != nil)
		case (cfg.Sequencer.LogStore != nil) != (tc.env[envCrashStore] == "1" && kind == node.LogStoreBolt):
			t.Errorf("#%d: crash journal %v", i, cfg.Sequencer.LogStore != nil)
		case (cfg.Sequencer.WALFileSystem != nil) != (tc.env[envCrashStore] == "1" && kind == node.LogStoreWAL):
			t.Errorf("#%d: crash file system for raft-wal %v", i, cfg.Sequencer.WALFileSystem != nil)
		}
		if crashStore != nil {
			crashStore.Close()
			crashStore = nil
		}
	}
	// The crash store lives in the data directory: without one it is refused.
	cfg := node.Config{Logger: slog.New(slog.DiscardHandler)}
	err := applyFaultEnv(&cfg, func(k string) string { return map[string]string{envCrashStore: "1"}[k] })
	if err == nil || !strings.Contains(err.Error(), "no data directory") || cfg.Sequencer.LogStore != nil || crashStore != nil {
		t.Errorf("crash store without a data directory: %v, log store %v", err, cfg.Sequencer.LogStore != nil)
	}
}

// TestFileClockOffset checks that the clock follows the file's offset, jumps included.
func TestFileClockOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock")
	c := &fileClock{path: path}
	if d := c.Now().Sub(time.Now()); d < -time.Second || d > time.Second {
		t.Fatalf("no file: offset %v, want about 0", d)
	}
	if err := os.WriteFile(path, []byte("-1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.readAt = time.Time{} // read again now
	if d := c.Now().Sub(time.Now()); d > -59*time.Minute || d < -61*time.Minute {
		t.Fatalf("offset %v, want about -1h", d)
	}
}
