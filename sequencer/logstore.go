package sequencer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	walosfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/segment"
	walfs "github.com/hashicorp/raft-wal/types"
	"go.etcd.io/bbolt"
)

// The log stores the Sequencer can build in DataDir (Config.LogStoreKind).
const (
	// LogStoreBolt is raft-boltdb/v2: the log and stable store in one B-tree file,
	// DataDir/raft.db. Each StoreLogs is one bbolt transaction: about six page writes and
	// two fdatasyncs.
	LogStoreBolt = "bolt"
	// LogStoreWAL is hashicorp/raft-wal: the log in append-only segment files and the
	// stable store in a small bbolt file, both in DataDir/wal. Each StoreLogs is one write
	// and one fsync. Its authors call it experimental; see docs/operations.md.
	LogStoreWAL = "wal"
)

// DefaultLogStore is the log store built in a new data dir when Config.LogStoreKind is
// empty. It was the faster of the two in the same-run comparison of issue 14
// (benchmarks/RESULTS.md) and passes the restart and kill -9 tests; a data dir that
// already holds a bolt log keeps it.
const DefaultLogStore = LogStoreWAL

const (
	// boltFile is the raft-boltdb file in DataDir.
	boltFile = "raft.db"
	// walDir is raft-wal's directory in DataDir.
	walDir = "wal"
	// walLockFile, in walDir, is the lock the Sequencer takes before raft-wal opens its
	// meta database, which waits for bbolt's own lock with no timeout.
	walLockFile = "LOCK"
	// lockPoll is how often a held data-dir lock is tried again, until boltOpenTimeout.
	lockPoll = 10 * time.Millisecond
)

// ErrLogStoreMismatch is returned by Open when DataDir holds the files of another log
// store than the configured one: the node's log is there, and starting with an empty log
// of the other kind would make it forget acknowledged entries. Nothing was changed.
var ErrLogStoreMismatch = errors.New("sequencer: data dir holds another log store")

// ErrDataDirLocked is returned by Open, Recover and CheckDataDir when another process (or
// another Sequencer in this one) holds the data dir's log store open: it waited
// boltOpenTimeout for the store's lock. Nothing was changed.
var ErrDataDirLocked = errors.New("sequencer: data dir locked (is a node running on it?)")

// validLogStore reports whether kind names a log store Open can build, or is empty
// (whichever dir holds, else DefaultLogStore).
func validLogStore(kind string) bool {
	return kind == "" || kind == LogStoreBolt || kind == LogStoreWAL
}

// DataDirLogStore returns the kind of log store Open builds in dir when
// Config.LogStoreKind is empty: the kind whose files dir holds, or DefaultLogStore if it
// holds neither. A dir holding both is ErrLogStoreMismatch.
func DataDirLogStore(dir string) (string, error) { return openKind("", dir) }

// logStoreInDir returns the kind of log store whose files dir holds, and whether it holds
// one; an error if it holds both.
func logStoreInDir(dir string) (kind string, ok bool, err error) {
	var found []string
	for _, k := range []struct{ kind, file string }{{LogStoreBolt, boltFile}, {LogStoreWAL, walDir}} {
		if _, err := os.Stat(filepath.Join(dir, k.file)); err == nil {
			found = append(found, k.kind)
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", false, fmt.Errorf("sequencer: data dir: %w", err)
		}
	}
	switch len(found) {
	case 0:
		return "", false, nil
	case 1:
		return found[0], true, nil
	default:
		return "", false, fmt.Errorf("%w: %s holds both %s and %s/; remove the one that is not the node's log", ErrLogStoreMismatch, dir, boltFile, walDir)
	}
}

// openKind returns the kind of log store to open in dir for the configured kind (""
// is the kind dir holds, else DefaultLogStore): ErrLogStoreMismatch if dir holds the
// files of another kind, or of both.
func openKind(kind, dir string) (string, error) {
	held, found, err := logStoreInDir(dir)
	switch {
	case err != nil:
		return "", err
	case !found && kind == "":
		return DefaultLogStore, nil
	case !found || kind == held:
		return kind, nil
	case kind == "":
		return held, nil
	}
	return "", fmt.Errorf("%w: --log-store %s, but %s holds a %s log store; start with the store that wrote them",
		ErrLogStoreMismatch, kind, dir, held)
}

// openLogStore builds the log and stable store of kind in dir (kind "": the kind dir
// holds, else DefaultLogStore), after checking that dir holds no other kind's files.
// close releases everything it opened.
func openLogStore(kind, dir string, wal walOptions, hlog *hclogAdapter) (store interface {
	raft.LogStore
	raft.StableStore
}, close func() error, err error) {
	if kind, err = openKind(kind, dir); err != nil {
		return nil, nil, err
	}
	switch kind {
	case LogStoreWAL:
		return openWAL(filepath.Join(dir, walDir), wal, hlog)
	default:
		// NoSync stays false: every StoreLogs call fsyncs before Raft acknowledges
		// (RAFT-NOTES, hashicorp/raft-boltdb issue 8). Batching amortises the fsync.
		b, err := raftboltdb.New(raftboltdb.Options{
			Path:        filepath.Join(dir, boltFile),
			BoltOptions: &bbolt.Options{Timeout: boltOpenTimeout},
		})
		if errors.Is(err, bbolt.ErrTimeout) {
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrDataDirLocked, filepath.Join(dir, boltFile), err)
		} else if err != nil {
			return nil, nil, fmt.Errorf("sequencer: open %s: %w", boltFile, err)
		}
		return b, b.Close, nil
	}
}

// walMetaFile is raft-wal's meta database in walDir: it lists the segments. Without it,
// raft-wal has written nothing.
const walMetaFile = "wal-meta.db"

// walHoldsLog reports whether dir's wal/ holds raft-wal's meta database (raft-wal has been
// opened there), rather than being empty or missing.
func walHoldsLog(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, walDir, walMetaFile))
	return err == nil
}

// walOptions are the raft-wal settings of Config: WALSegmentBytes, WALFiles and
// WALFileSystem.
type walOptions struct {
	segmentBytes int
	files        string // WALFilesZeroed or else preallocated; ignored when fs is set
	fs           walfs.VFS
}

// openWAL opens raft-wal in dir under an exclusive lock on dir/LOCK, taken with a timeout
// first: raft-wal's meta database would otherwise wait forever for a second opener's lock
// (raft-wal v0.4.1 opens wal-meta.db with bbolt's default of no timeout). raft-wal fsyncs
// every StoreLogs before it returns.
func openWAL(dir string, opts walOptions, hlog *hclogAdapter) (*raftwal.WAL, func() error, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("sequencer: wal dir: %w", err)
	}
	lock, err := lockFile(filepath.Join(dir, walLockFile), boltOpenTimeout)
	if err != nil {
		return nil, nil, err
	}
	fs := opts.fs
	closeFS := func() error { return nil }
	switch {
	case fs != nil:
		// An injected file system (the fault harness's) makes its own files: WALFiles
		// does not apply.
	case opts.files == WALFilesZeroed:
		zfs, err := openZeroFS(dir)
		if err != nil {
			_ = lock.Close()
			return nil, nil, err
		}
		fs, closeFS = zfs, zfs.Close
	default:
		fs = walosfs.New()
	}
	w, err := raftwal.Open(dir, raftwal.WithSegmentSize(opts.segmentBytes), raftwal.WithLogger(hlog.Named("wal")),
		raftwal.WithSegmentFiler(segment.NewFiler(dir, fs)))
	if err != nil {
		_ = closeFS()
		_ = lock.Close()
		return nil, nil, fmt.Errorf("sequencer: open raft-wal in %s: %w", dir, err)
	}
	// The file system's zeroer stops before the lock goes: the next opener owns the spare.
	return w, func() error { return errors.Join(w.Close(), closeFS(), lock.Close()) }, nil
}

// lockFile opens path and takes an exclusive flock on it, trying until timeout. Closing
// the file releases the lock; so does the process's death.
func lockFile(path string, timeout time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sequencer: lock %s: %w", path, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w: %s: %w", ErrDataDirLocked, path, err)
			}
			return nil, fmt.Errorf("sequencer: lock %s: %w", path, err)
		}
		time.Sleep(lockPoll)
	}
}
