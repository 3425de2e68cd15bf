package faultenv

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/lockstepdb/lockstep/internal/crashstore"
)

// journalDir is the folder of a data directory that holds bolt's crash model.
const journalDir = "crashstore"

// CrashLog is the crash model of a node's Raft log, in its data directory: exactly one of
// its fields is set.
type CrashLog struct {
	// FS is the file system raft-wal must run on: its segment files keep durable images
	// in DATADIR/wal/.crash-images.
	FS *crashstore.FS
	// Store is the Raft log and stable store standing in for bolt (bbolt has no file
	// system seam): a journal in DATADIR/crashstore.
	Store *crashstore.Store
}

// HasJournal reports whether dataDir holds bolt's crash journal, which a node must keep
// using (a wal log started beside it would be empty).
func HasJournal(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, journalDir))
	return err == nil
}

// OpenCrashLog opens the crash model of the Raft log in dataDir: for raft-wal when wal is
// true, else the journal standing in for bolt.
func OpenCrashLog(dataDir string, wal bool) (*CrashLog, error) {
	if dataDir == "" {
		return nil, errors.New("no data directory")
	}
	if wal {
		fs, err := crashstore.OpenFS(filepath.Join(dataDir, "wal"))
		if err != nil {
			return nil, err
		}
		return &CrashLog{FS: fs}, nil
	}
	st, err := crashstore.Open(filepath.Join(dataDir, journalDir))
	if err != nil {
		return nil, err
	}
	return &CrashLog{Store: st}, nil
}

// Close closes the journal, if any; raft-wal closes its own files. Call it after the node
// that used the log has stopped.
func (c *CrashLog) Close() error {
	if c == nil || c.Store == nil {
		return nil
	}
	return c.Store.Close()
}
