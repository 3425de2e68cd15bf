package sequencer

// The zeroed raft-wal file system: segment files written with zeros when they are made,
// so that a commit's write lands in blocks already written and its fdatasync commits no
// extent conversion (PERF-NOTES: 0.29–0.36 ms per sync instead of 0.39–0.46 ms).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	walosfs "github.com/hashicorp/raft-wal/fs"
	waltypes "github.com/hashicorp/raft-wal/types"
	"golang.org/x/sys/unix"
)

// The kinds of raft-wal segment file (Config.WALFiles).
const (
	// WALFilesPreallocated is raft-wal's own file system: a new segment is fallocated
	// (its extents unwritten) and every commit is an fsync, which also commits the
	// conversion of the extents it wrote.
	WALFilesPreallocated = "preallocated"
	// WALFilesZeroed writes a new segment full of zeros and fdatasyncs it before raft-wal
	// writes to it, keeps one spare segment zeroed in the background so that a new
	// segment is usually a rename, and commits with fdatasync.
	WALFilesZeroed = "zeroed"
	// DefaultWALFiles is the kind of segment file used when Config.WALFiles is empty.
	DefaultWALFiles = WALFilesPreallocated
)

// Names, in the wal directory, of the spare segment: without raft-wal's ".wal" suffix, so
// its segment filer ignores them. zeroSpareTemp is being zeroed; zeroSpareReady is zeroed
// and fdatasynced.
const (
	zeroSpareTemp  = "spare.zeroing"
	zeroSpareReady = "spare.zeroed"
)

// zeroChunk is how much of a spare the background zeroer writes and fdatasyncs at a time;
// zeroPause is its rest after each chunk, so that the commits' syncs get the disk between.
const (
	zeroChunk = 1 << 20
	zeroPause = 2 * time.Millisecond
)

// validWALFiles reports whether k is a kind of segment file Config.WALFiles accepts.
func validWALFiles(k string) bool {
	return k == "" || k == WALFilesPreallocated || k == WALFilesZeroed
}

// zeroFS is raft-wal's file system (types.VFS) for WALFilesZeroed, over the operating
// system's files in one directory. Create makes a zero-filled segment: it takes the spare
// when one of the right size is ready, else it zeroes the file itself. A segment asks the
// background zeroer for the next spare once raft-wal writes past its middle, so a short
// log (a test's node, a node that restarts often) never pays for a spare it does not use.
// Files' Sync is fdatasync (and, after Create, the directory's fsync the first time, as
// raft-wal's own file system does).
//
// Ownership: openZeroFS starts the zeroer goroutine; Close stops it and waits for it.
// Safe for concurrent use.
type zeroFS struct {
	walosfs.FS // ListDir, Delete, OpenReader: raft-wal's own
	dir        string
	pause      time.Duration // zeroPause

	mu      sync.Mutex
	cond    *sync.Cond // signalled when want, busy, ready or closed change
	want    uint64     // size of the spare asked for; 0: none
	ready   uint64     // size of the spare in zeroSpareReady; 0: none
	busy    bool       // the zeroer is writing zeroSpareTemp
	hurry   atomic.Bool
	closed  bool
	done    chan struct{}
	zeroErr error // the zeroer's last failure, reported by Close
}

// openZeroFS returns the zeroed file system for dir (which must exist) and starts its
// zeroer, idle until a segment asks for a spare. A spare left from an earlier run is kept
// if it was completed (and replaced if its size differs), else removed.
func openZeroFS(dir string) (*zeroFS, error) {
	fs := &zeroFS{dir: dir, pause: zeroPause, done: make(chan struct{})}
	fs.cond = sync.NewCond(&fs.mu)
	if err := os.Remove(filepath.Join(dir, zeroSpareTemp)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("sequencer: wal spare: %w", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, zeroSpareReady)); err == nil {
		// A spare that is also a segment's name (a crash inside a fallback link and
		// remove) is the segment's now: drop the spare's name.
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			if err := os.Remove(filepath.Join(dir, zeroSpareReady)); err != nil {
				return nil, fmt.Errorf("sequencer: wal spare: %w", err)
			}
		} else {
			fs.ready = uint64(fi.Size())
		}
	}
	go fs.zeroer()
	return fs, nil
}

// Close stops the zeroer (a spare half written is removed at the next open) and waits for
// it to return.
func (fs *zeroFS) Close() error {
	fs.mu.Lock()
	if fs.closed {
		fs.mu.Unlock()
		return nil
	}
	fs.closed = true
	fs.cond.Broadcast()
	fs.mu.Unlock()
	<-fs.done
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.zeroErr
}

// Create makes the segment dir/name of size bytes, zero-filled and fdatasynced. It fails
// if the file exists. dir must be the file system's directory.
func (fs *zeroFS) Create(dir, name string, size uint64) (waltypes.WritableFile, error) {
	if filepath.Clean(dir) != filepath.Clean(fs.dir) {
		return nil, fmt.Errorf("sequencer: zeroed wal files: create in %s, serving %s", dir, fs.dir)
	}
	path := filepath.Join(dir, name)
	f, err := fs.takeSpare(path, size)
	if err != nil {
		return nil, err
	}
	if f == nil {
		if f, err = writeZeros(path, size, 0, nil); err != nil {
			return nil, err
		}
	}
	return &zeroFile{File: f, dir: dir, fs: fs, half: int64(size / 2)}, nil
}

// wantSpare asks the zeroer for a spare of size bytes.
func (fs *zeroFS) wantSpare(size uint64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.want != size {
		fs.want = size
		fs.cond.Broadcast()
	}
}

// takeSpare links the ready spare to path and opens it, after waiting for the zeroer if
// it is busy (it stops pausing). Nil, nil: no spare of that size. Either way the zeroer
// has no spare to make until the new segment asks.
func (fs *zeroFS) takeSpare(path string, size uint64) (*os.File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.busy && fs.want == size {
		fs.hurry.Store(true)
		for fs.busy {
			fs.cond.Wait()
		}
		fs.hurry.Store(false)
	}
	fs.want = 0
	if fs.ready == 0 || fs.ready != size {
		return nil, nil
	}
	spare := filepath.Join(fs.dir, zeroSpareReady)
	// A rename that fails if path exists, as Create must; where the file system has no
	// such rename, a link and a remove.
	err := unix.Renameat2(unix.AT_FDCWD, spare, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if err = os.Link(spare, path); err == nil {
			err = os.Remove(spare)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sequencer: wal spare to %s: %w", path, err)
	}
	fs.ready = 0
	return os.OpenFile(path, os.O_RDWR, 0o644)
}

// zeroer makes a spare of the size asked for whenever there is none, until Close.
func (fs *zeroFS) zeroer() {
	defer close(fs.done)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for {
		for !fs.closed && (fs.want == 0 || fs.ready == fs.want) {
			fs.cond.Wait()
		}
		if fs.closed {
			return
		}
		size := fs.want
		if fs.ready != 0 {
			// The wrong size (WALSegmentBytes changed): replace it.
			_ = os.Remove(filepath.Join(fs.dir, zeroSpareReady))
			fs.ready = 0
		}
		fs.busy = true
		fs.mu.Unlock()
		err := fs.makeSpare(size)
		fs.mu.Lock()
		fs.busy = false
		switch {
		case err == nil:
			fs.ready = size
		case errors.Is(err, errZeroStopped):
		default:
			// Create zeroes its file itself until a later spare succeeds.
			fs.zeroErr = err
			fs.want = 0
		}
		fs.cond.Broadcast()
	}
}

// errZeroStopped: Close stopped the zeroer in the middle of a spare.
var errZeroStopped = errors.New("sequencer: wal spare: stopped")

// makeSpare writes zeroSpareTemp full of zeros, paced, and renames it zeroSpareReady.
func (fs *zeroFS) makeSpare(size uint64) error {
	tmp := filepath.Join(fs.dir, zeroSpareTemp)
	stop := func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return fs.closed
	}
	f, err := writeZeros(tmp, size, fs.pause, func() (bool, bool) { return stop(), fs.hurry.Load() })
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("sequencer: wal spare: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(fs.dir, zeroSpareReady)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("sequencer: wal spare: %w", err)
	}
	return nil
}

// writeZeros creates path (failing if it exists) and writes size zero bytes to it, a chunk
// at a time, each fdatasynced. With pause > 0, it rests that long after each chunk unless
// check reports hurry, and returns errZeroStopped when check reports stop.
func writeZeros(path string, size uint64, pause time.Duration, check func() (stop, hurry bool)) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		_ = f.Close()
		return nil, err
	}
	zeros := make([]byte, zeroChunk)
	for off := uint64(0); off < size; off += zeroChunk {
		n := min(size-off, zeroChunk)
		if _, err := f.WriteAt(zeros[:n], int64(off)); err != nil {
			return fail(fmt.Errorf("sequencer: zero %s: %w", path, err))
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return fail(fmt.Errorf("sequencer: zero %s: fdatasync: %w", path, err))
		}
		if check == nil {
			continue
		}
		stop, hurry := check()
		if stop {
			return fail(errZeroStopped)
		}
		if pause > 0 && !hurry {
			time.Sleep(pause)
		}
	}
	return f, nil
}

// OpenWriter opens an existing segment for writing: raft-wal's tail segment at start-up.
// Its Sync is fdatasync too (still correct for a preallocated file from a run with the
// other kind: fdatasync commits the extent conversion a read needs, just not faster).
func (fs *zeroFS) OpenWriter(dir, name string) (waltypes.WritableFile, error) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	zf := &zeroFile{File: f, fs: fs, half: fi.Size() / 2}
	zf.synced.Store(true)
	return zf, nil
}

// zeroFile is a segment of zeroFS: Sync is fdatasync, and after Create the first Sync
// also fsyncs the directory (the new name must survive a crash before its data counts).
// The first write past half its size asks for a spare of its size.
type zeroFile struct {
	*os.File
	dir    string
	fs     *zeroFS
	half   int64
	asked  atomic.Bool
	synced atomic.Bool // the directory has been fsynced since the file was made
}

// WriteAt writes p at off, and asks for the next segment's spare the first time it
// writes past the middle of the file.
func (f *zeroFile) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.half && !f.asked.Swap(true) {
		f.fs.wantSpare(uint64(2 * f.half))
	}
	return f.File.WriteAt(p, off)
}

// Sync fdatasyncs the file, and the first time after Create its directory.
func (f *zeroFile) Sync() error {
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return err
	}
	if f.synced.Load() {
		return nil
	}
	d, err := os.Open(f.dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		f.synced.Store(true)
	}
	return err
}
