package sequencer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/hashicorp/raft"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// FIEMAP (linux/fiemap.h): the ioctl and the flags the tests read.
const (
	fsIocFiemap          = 0xC020660B
	fiemapFlagSync       = 0x1
	fiemapExtentLast     = 0x1
	fiemapExtentUnknown  = 0x2
	fiemapExtentDelalloc = 0x4
	fiemapExtentUnwrit   = 0x800
	fiemapMaxExtents     = 256
)

type fiemapExtent struct {
	Logical, Physical, Length uint64
	_                         [2]uint64
	Flags                     uint32
	_                         [3]uint32
}

type fiemapReq struct {
	Start, Length                uint64
	Flags, Mapped, Count, unused uint32
	Extents                      [fiemapMaxExtents]fiemapExtent
}

// errNoFiemap: the file system does not answer FIEMAP.
var errNoFiemap = errors.New("no FIEMAP")

// unwrittenBytes reports how many bytes of path's size are not in written extents:
// holes, and extents FIEMAP marks unwritten, delayed or unknown.
func unwrittenBytes(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := uint64(fi.Size())
	var written, start uint64
	for start < size {
		req := fiemapReq{Start: start, Length: size - start, Flags: fiemapFlagSync, Count: fiemapMaxExtents}
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&req))); e != 0 {
			if e == unix.EOPNOTSUPP || e == unix.ENOTTY {
				return 0, errNoFiemap
			}
			return 0, e
		}
		if req.Mapped == 0 {
			break
		}
		last := false
		for _, ext := range req.Extents[:req.Mapped] {
			if ext.Flags&(fiemapExtentUnwrit|fiemapExtentDelalloc|fiemapExtentUnknown) == 0 {
				end := min(ext.Logical+ext.Length, size)
				if end > ext.Logical {
					written += end - ext.Logical
				}
			}
			start = ext.Logical + ext.Length
			last = last || ext.Flags&fiemapExtentLast != 0
		}
		if last {
			break
		}
	}
	return int64(size - written), nil
}

// segments returns the raft-wal segment files in walDir.
func segments(t *testing.T, walDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(walDir, "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// storeEntries appends entries from..to (one per StoreLogs, 1 KiB each, data = index).
func storeEntries(t testing.TB, store raft.LogStore, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i++ {
		if err := store.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: entryData(i)}}); err != nil {
			t.Fatalf("StoreLogs(%d): %v", i, err)
		}
	}
}

func entryData(i uint64) []byte {
	return bytes.Repeat([]byte(strconv.FormatUint(i, 10)+";"), 1024/(len(strconv.FormatUint(i, 10))+1))
}

// checkEntries fails unless store holds exactly entries 1..last as storeEntries wrote them.
func checkEntries(t *testing.T, store raft.LogStore, last uint64) {
	t.Helper()
	if first, err := store.FirstIndex(); err != nil || first != min(last, 1) {
		t.Fatalf("FirstIndex %d, %v; want 1", first, err)
	}
	if got, err := store.LastIndex(); err != nil || got != last {
		t.Fatalf("LastIndex %d, %v; want %d", got, err, last)
	}
	for i := uint64(1); i <= last; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if !bytes.Equal(l.Data, entryData(i)) {
			t.Fatalf("entry %d: data %.20q…", i, l.Data)
		}
	}
}

func openKindWAL(t *testing.T, dir, files string, segmentBytes int) (raft.LogStore, func() error) {
	t.Helper()
	store, closeStore, err := openLogStore(LogStoreWAL, dir, walOptions{segmentBytes: segmentBytes, files: files}, newHclogAdapter(discardLogger(), "raft"))
	if err != nil {
		t.Fatal(err)
	}
	return store, closeStore
}

// TestWALFilesExtentsWritten: with WALFilesZeroed every segment raft-wal writes to (the
// first, made inline, and the next ones, taken from the spare) is written extents from
// end to end, so a commit converts no extents; with WALFilesPreallocated (raft-wal's own)
// the same check finds unwritten extents, which shows it can fail.
func TestWALFilesExtentsWritten(t *testing.T) {
	const segBytes = 256 << 10
	for _, kind := range []string{WALFilesZeroed, WALFilesPreallocated} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			store, closeStore := openKindWAL(t, dir, kind, segBytes)
			defer closeStore()
			// ~3 segments of 1 KiB entries.
			storeEntries(t, store, 1, 3*segBytes/1024)
			segs := segments(t, filepath.Join(dir, walDir))
			if len(segs) < 3 {
				t.Fatalf("%d segments, want at least 3", len(segs))
			}
			for _, seg := range segs {
				n, err := unwrittenBytes(seg)
				if errors.Is(err, errNoFiemap) {
					t.Skipf("the file system of %s does not answer FIEMAP", dir)
				} else if err != nil {
					t.Fatal(err)
				}
				switch {
				case kind == WALFilesZeroed && n != 0:
					t.Errorf("%s: %d bytes not written; want a segment written from end to end", filepath.Base(seg), n)
				case kind == WALFilesPreallocated && seg == segs[len(segs)-1] && n == 0:
					// The tail segment is only partly written.
					t.Errorf("%s (preallocated tail): all extents written; the check cannot tell", filepath.Base(seg))
				}
			}
			checkEntries(t, store, 3*segBytes/1024)
		})
	}
}

// TestWALFilesRecoveryAcrossKinds: a log written with one kind of segment file reopens
// with the other, every entry intact, and grows there (new segments of the new kind).
func TestWALFilesRecoveryAcrossKinds(t *testing.T) {
	const segBytes = 64 << 10
	for _, order := range [][2]string{{WALFilesZeroed, WALFilesPreallocated}, {WALFilesPreallocated, WALFilesZeroed}} {
		t.Run(order[0]+"-then-"+order[1], func(t *testing.T) {
			dir := t.TempDir()
			var last uint64
			for round, kind := range []string{order[0], order[1], order[0]} {
				store, closeStore := openKindWAL(t, dir, kind, segBytes)
				checkEntries(t, store, last)
				storeEntries(t, store, last+1, last+200) // ~3 segments
				last += 200
				checkEntries(t, store, last)
				if err := closeStore(); err != nil {
					t.Fatalf("round %d (%s): close: %v", round, kind, err)
				}
			}
		})
	}
}

// TestWALZeroerStopsOnClose: the spare zeroer is the file system's goroutine; Close
// stops it in the middle of a spare and waits for it, and the half-zeroed spare is gone
// at the next open.
func TestWALZeroerStopsOnClose(t *testing.T) {
	before := goleak.IgnoreCurrent()
	dir := t.TempDir()
	fs, err := openZeroFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	fs.wantSpare(256 << 20) // big enough that Close comes before it is done
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, zeroSpareTemp)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the zeroer did not start a spare")
		}
		time.Sleep(time.Millisecond)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
	if _, err := os.Stat(filepath.Join(dir, zeroSpareReady)); err == nil {
		t.Fatal("a 256 MiB spare was finished before Close; the test did not stop it midway")
	}
	fs, err = openZeroFS(dir) // no spare wanted: the zeroer stays idle
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	if _, err := os.Stat(filepath.Join(dir, zeroSpareTemp)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("half-zeroed spare after reopen: %v", err)
	}
}

// TestWALZeroFSSpare: the zeroer makes a spare in the background when asked; Create takes
// it (a link, so an existing name still fails as Create must), the new segment is the
// spare's size and written end to end, and a write past its middle asks for the next
// spare, not before.
func TestWALZeroFSSpare(t *testing.T) {
	const size = 1 << 20
	dir := t.TempDir()
	fs, err := openZeroFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	fs.wantSpare(size)
	spare := filepath.Join(dir, zeroSpareReady)
	waitSpare := func() {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			if fi, err := os.Stat(spare); err == nil && fi.Size() == size {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("no spare made")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitSpare()
	f, err := fs.Create(dir, "a.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := os.Stat(spare); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the spare is still there after Create: %v", err)
	}
	if _, err := f.WriteAt([]byte("entry"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "a.wal"))
	if err != nil || fi.Size() != size {
		t.Fatalf("a.wal: %v, %v; want %d bytes", fi, err, size)
	}
	if n, err := unwrittenBytes(filepath.Join(dir, "a.wal")); err == nil && n != 0 {
		t.Fatalf("a.wal: %d bytes not written", n)
	} else if err != nil && !errors.Is(err, errNoFiemap) {
		t.Fatal(err)
	}
	wanted := func() uint64 {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return fs.want
	}
	if w := wanted(); w != 0 {
		t.Fatalf("a spare of %d bytes asked for before the new segment is half full", w)
	}
	if _, err := f.WriteAt([]byte("past the middle"), size/2); err != nil {
		t.Fatal(err)
	}
	if w := wanted(); w != size {
		t.Fatalf("after a write past the middle, spare asked for: %d bytes, want %d", w, size)
	}
	waitSpare()
	if _, err := fs.Create(dir, "a.wal", size); !errors.Is(err, os.ErrExist) {
		t.Fatalf("Create of an existing segment: %v, want os.ErrExist", err)
	}
	if _, err := os.Stat(spare); err != nil {
		t.Fatalf("a failed Create used the spare: %v", err)
	}
}

// walKillChildEnv makes the test binary the writer process of TestWALFilesKill9.
const walKillChildEnv = "LOCKSTEP_WALFS_KILL_CHILD"

// TestWALFilesKill9: a process appending to a zeroed-file log (small segments, so the
// spare is taken and re-zeroed all along) is killed with SIGKILL mid-stream. The log
// reopens with either kind, holding every entry the process was told was stored and
// nothing torn: whatever the kill cut off is dropped as raft-wal drops a torn tail.
func TestWALFilesKill9(t *testing.T) {
	if dir := os.Getenv(walKillChildEnv); dir != "" {
		walKillChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALFilesKill9$")
	cmd.Env = append(os.Environ(), walKillChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	var acked uint64
	sc := bufio.NewScanner(out)
	for acked < 400 && sc.Scan() {
		line := sc.Text()
		if i, ok := strings.CutPrefix(line, "stored "); ok {
			if acked, err = strconv.ParseUint(i, 10, 64); err != nil {
				t.Fatalf("child: %q", line)
			}
		}
	}
	if acked < 400 {
		t.Fatalf("child stopped after %d entries: %v", acked, sc.Err())
	}
	if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	for _, kind := range []string{WALFilesPreallocated, WALFilesZeroed} {
		store, closeStore := openKindWAL(t, dir, kind, 64<<10)
		last, err := store.LastIndex()
		if err != nil || last < acked {
			t.Fatalf("%s: LastIndex %d, %v; the child was told %d were stored", kind, last, err, acked)
		}
		checkEntries(t, store, last)
		storeEntries(t, store, last+1, last+1)
		if err := closeStore(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: reopened with %d entries (%d acknowledged before the kill)", kind, last, acked)
	}
}

// walKillChild appends to a zeroed-file log in dir until it is killed, printing each
// stored index.
func walKillChild(dir string) {
	store, _, err := openLogStore(LogStoreWAL, dir, walOptions{segmentBytes: 64 << 10, files: WALFilesZeroed}, newHclogAdapter(discardLogger(), "raft"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := uint64(1); ; i++ {
		if err := store.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: entryData(i)}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("stored %d\n", i)
	}
}

// TestWALZeroFSLinkedSpare: a spare whose file is also a segment's (a crash between the
// fallback's link and remove) is not a spare: open drops the name, keeps the segment,
// and does not hand the segment's file to the next Create.
func TestWALZeroFSLinkedSpare(t *testing.T) {
	dir := t.TempDir()
	seg := filepath.Join(dir, "a.wal")
	if err := os.WriteFile(seg, []byte("segment data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(seg, filepath.Join(dir, zeroSpareReady)); err != nil {
		t.Fatal(err)
	}
	fs, err := openZeroFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	if _, err := os.Stat(filepath.Join(dir, zeroSpareReady)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the linked spare's name is still there: %v", err)
	}
	f, err := fs.Create(dir, "b.wal", 12)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 12)
	if _, err := f.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, make([]byte, 12)) {
		t.Fatalf("new segment holds %q, %v; want zeros", buf, err)
	}
	if b, err := os.ReadFile(seg); err != nil || string(b) != "segment data" {
		t.Fatalf("segment: %q, %v", b, err)
	}
}
