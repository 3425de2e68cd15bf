package faultenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRead: malformed values are an error naming the variable and give no hooks; good
// ones give exactly the hooks they name.
func TestRead(t *testing.T) {
	clock := filepath.Join(t.TempDir(), "clock")
	badClock := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(badClock, []byte("yesterday"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		env     map[string]string
		wantErr string
	}{
		{env: map[string]string{}},
		{env: map[string]string{RaftRoutes: "127.0.0.1:1=127.0.0.1:2, 127.0.0.1:3=127.0.0.1:4"}},
		{env: map[string]string{ClockFile: clock}},
		{env: map[string]string{CrashStore: "1"}},
		{env: map[string]string{CrashStore: "0"}},
		{env: map[string]string{RaftRoutes: "127.0.0.1:1"}, wantErr: RaftRoutes},
		{env: map[string]string{RaftRoutes: "a=b,a=c"}, wantErr: "routed twice"},
		{env: map[string]string{ClockFile: badClock}, wantErr: ClockFile},
		{env: map[string]string{CrashStore: "yes", RaftRoutes: "a=b"}, wantErr: CrashStore},
	} {
		h, err := Read(func(k string) string { return tc.env[k] })
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("#%d: got %v, want an error with %q", i, err, tc.wantErr)
		case tc.wantErr != "" && (h.Dial != nil || h.Now != nil || h.Crash):
			t.Errorf("#%d: a bad value gave hooks %+v", i, h)
		case tc.wantErr == "" && err != nil:
			t.Errorf("#%d: %v", i, err)
		case tc.wantErr == "" && ((h.Dial != nil) != (tc.env[RaftRoutes] != "") || (h.Now != nil) != (tc.env[ClockFile] != "") ||
			h.Crash != (tc.env[CrashStore] == "1")):
			t.Errorf("#%d: got hooks dial %v, clock %v, crash %v", i, h.Dial != nil, h.Now != nil, h.Crash)
		}
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

// TestOpenCrashLog: the crash model opens in the data directory for either log store, a
// journal left there is found, and no data directory is refused.
func TestOpenCrashLog(t *testing.T) {
	dir := t.TempDir()
	if HasJournal(dir) {
		t.Fatal("an empty data directory has a journal")
	}
	wal, err := OpenCrashLog(dir, true)
	if err != nil || wal.FS == nil || wal.Store != nil {
		t.Fatalf("wal: %+v, %v", wal, err)
	}
	wal.Close()
	bolt, err := OpenCrashLog(dir, false)
	if err != nil || bolt.Store == nil || bolt.FS != nil {
		t.Fatalf("bolt: %+v, %v", bolt, err)
	}
	if err := bolt.Close(); err != nil {
		t.Fatal(err)
	}
	if !HasJournal(dir) {
		t.Error("the journal is not found after it was opened")
	}
	if _, err := OpenCrashLog("", false); err == nil {
		t.Error("no data directory: want an error")
	}
}
