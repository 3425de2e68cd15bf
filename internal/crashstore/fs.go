package crashstore

// FS: the same power-loss model for raft-wal, the real log store, through its file-system
// seam (types.VFS), so that the crash-consistency check runs the production store's code.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft-wal/types"

	"github.com/lockstepdb/lockstep/internal/planted"
)

// imageDir is FS's directory, inside the directory it serves, of the durable images.
const imageDir = ".crash-images"

// FS is a raft-wal file system (types.VFS) over real files that loses, at a simulated
// crash, every write not yet fsynced. Each file FS creates has a durable image in
// DIR/.crash-images: Sync fsyncs the file and then copies the byte ranges written since
// the last Sync into the image and fsyncs it. OpenFS, at the next start, replaces every
// file that has an image by the image — the file as the disk held it at its last
// completed fsync, with the preallocated size of its creation. Creating and deleting
// files are modelled as durable at once (raft-wal fsyncs the directory on delete, and on
// a new file's first Sync). Files FS did not create (raft-wal's meta.db, a bbolt file that
// fsyncs every commit itself) are left alone.
//
// In the jepsen_nosync build (a planted bug), Sync updates the images only when the last
// update is plantedSyncEvery old, and returns before the writes are durable otherwise.
//
// Contract: one FS per directory and process; the files' methods are safe for concurrent
// use.
type FS struct {
	dir string

	mu       sync.Mutex
	syncedAt time.Time // when images were last brought up to date
	// pending are files with writes a planted-bug Sync acknowledged without imaging.
	pending map[*file]bool
	// Discarded is how many bytes OpenFS found written after the last fsync and threw
	// away (summed over the files that differed from their images).
	Discarded int64
}

// OpenFS simulates the power loss of a crash in dir (every file with an image goes back
// to it) and returns the file system for raft-wal to run on there. dir is created if
// missing.
func OpenFS(dir string) (*FS, error) {
	if err := os.MkdirAll(filepath.Join(dir, imageDir), 0o700); err != nil {
		return nil, fmt.Errorf("crashstore: %w", err)
	}
	fs := &FS{dir: dir, pending: map[*file]bool{}}
	ents, err := os.ReadDir(filepath.Join(dir, imageDir))
	if err != nil {
		return nil, fmt.Errorf("crashstore: %w", err)
	}
	for _, e := range ents {
		n, err := restoreImage(filepath.Join(dir, imageDir, e.Name()), filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("crashstore: restore %s: %w", e.Name(), err)
		}
		fs.Discarded += n
	}
	return fs, nil
}

// restoreImage makes path a copy of image and returns how many bytes differed (bytes past
// the image's end count too). Both files are sparse where nothing was written (Create
// truncates them to their size), so only the extents holding data in either one are
// compared.
func restoreImage(image, path string) (int64, error) {
	img, err := os.Open(image)
	if err != nil {
		return 0, err
	}
	defer img.Close()
	st, err := img.Stat()
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil {
		return 0, err
	}
	var differ int64
	if fst.Size() > st.Size() {
		differ = fst.Size() - st.Size()
	}
	extents, err := dataExtents(img, st.Size())
	if err != nil {
		return 0, err
	}
	more, err := dataExtents(f, min(fst.Size(), st.Size()))
	if err != nil {
		return 0, err
	}
	want, have := make([]byte, 1<<20), make([]byte, 1<<20)
	for _, e := range append(extents, more...) {
		for off := e.off; off < e.off+e.n; off += int64(len(want)) {
			n := int(min(int64(len(want)), e.off+e.n-off))
			if _, err := img.ReadAt(want[:n], off); err != nil && !errors.Is(err, io.EOF) {
				return 0, err
			}
			m, err := f.ReadAt(have[:n], off)
			if err != nil && !errors.Is(err, io.EOF) {
				return 0, err
			}
			if m == n && bytes.Equal(want[:n], have[:n]) {
				continue
			}
			for i := range n {
				if i >= m || want[i] != have[i] {
					differ++
				}
			}
			if _, err := f.WriteAt(want[:n], off); err != nil {
				return 0, err
			}
		}
	}
	if differ == 0 {
		return 0, nil
	}
	return differ, errors.Join(f.Truncate(st.Size()), f.Sync())
}

// Whence values of lseek(2) on Linux that find the extents of a sparse file.
const (
	seekData = 3 // SEEK_DATA
	seekHole = 4 // SEEK_HOLE
)

// dataExtents returns the extents of f's first size bytes that hold data (the whole
// range if the file system cannot tell).
func dataExtents(f *os.File, size int64) ([]span, error) {
	var out []span
	for off := int64(0); off < size; {
		start, err := f.Seek(off, seekData)
		if errors.Is(err, syscall.ENXIO) {
			break // no data after off
		} else if err != nil {
			return []span{{0, size}}, nil
		}
		if start >= size {
			break
		}
		end, err := f.Seek(start, seekHole)
		if err != nil {
			return []span{{0, size}}, nil
		}
		end = min(end, size)
		out = append(out, span{start, end - start})
		off = end
	}
	return out, nil
}

// ListDir implements types.VFS: the regular files of dir, sorted, without FS's images.
func (fs *FS) ListDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Create implements types.VFS: a new file of size bytes (zeros), whose image is the same.
func (fs *FS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	img, err := os.OpenFile(fs.imagePath(dir, name), os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o600)
	if err == nil {
		err = errors.Join(f.Truncate(int64(size)), img.Truncate(int64(size)), img.Sync())
	}
	if err != nil {
		f.Close()
		if img != nil {
			img.Close()
		}
		return nil, fmt.Errorf("crashstore: create %s: %w", name, err)
	}
	return &file{fs: fs, f: f, img: img}, nil
}

// Delete implements types.VFS: the file and its image go.
func (fs *FS) Delete(dir, name string) error {
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		return err
	}
	if err := os.Remove(fs.imagePath(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// OpenReader implements types.VFS.
func (fs *FS) OpenReader(dir, name string) (types.ReadableFile, error) {
	return os.Open(filepath.Join(dir, name))
}

// OpenWriter implements types.VFS: writes through it reach the image at Sync, as for a
// created file. A file without an image (written before this FS served the directory) is
// adopted: its image starts as its contents now.
func (fs *FS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	img, err := os.OpenFile(fs.imagePath(dir, name), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		img, err = adopt(f, fs.imagePath(dir, name))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("crashstore: open %s: %w", name, err)
	}
	return &file{fs: fs, f: f, img: img}, nil
}

// adopt writes a new image at path holding f's contents, fsynced.
func adopt(f *os.File, path string) (*os.File, error) {
	img, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(img, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		img.Close()
		return nil, err
	}
	if err := img.Sync(); err != nil {
		img.Close()
		return nil, err
	}
	return img, nil
}

func (fs *FS) imagePath(dir, name string) string {
	return filepath.Join(dir, imageDir, name)
}

// Close brings nothing up to date: what was not synced stays out of the images, as a
// crash would leave it.
func (fs *FS) Close() error { return nil }

// file is a WritableFile whose writes become durable (reach its image) at Sync.
type file struct {
	fs *FS

	mu    sync.Mutex
	f     *os.File
	img   *os.File
	dirty []span // written since the last imaging, in write order
}

// span is a byte range [off, off+n).
type span struct{ off, n int64 }

// WriteAt implements io.WriterAt.
func (w *file) WriteAt(p []byte, off int64) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.f.WriteAt(p, off)
	if n > 0 {
		if k := len(w.dirty) - 1; k >= 0 && w.dirty[k].off+w.dirty[k].n == off {
			w.dirty[k].n += int64(n)
		} else {
			w.dirty = append(w.dirty, span{off, int64(n)})
		}
	}
	return n, err
}

// ReadAt implements io.ReaderAt: the file as written (the page cache), synced or not.
func (w *file) ReadAt(p []byte, off int64) (int, error) { return w.f.ReadAt(p, off) }

// Sync implements types.WritableFile: the writes so far become durable.
func (w *file) Sync() error {
	if err := w.f.Sync(); err != nil {
		return err
	}
	fs := w.fs
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if planted.NoSync && time.Since(fs.syncedAt) < plantedSyncEvery { // a test-only build's planted bug
		fs.pending[w] = true
		return nil
	}
	fs.pending[w] = true
	for p := range fs.pending {
		if err := p.image(); err != nil {
			return err
		}
		delete(fs.pending, p)
	}
	fs.syncedAt = time.Now()
	return nil
}

// image copies the dirty ranges into the image and fsyncs it.
func (w *file) image() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var buf []byte
	for _, s := range w.dirty {
		if int64(cap(buf)) < s.n {
			buf = make([]byte, s.n)
		}
		b := buf[:s.n]
		if _, err := w.f.ReadAt(b, s.off); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if _, err := w.img.WriteAt(b, s.off); err != nil {
			return err
		}
	}
	w.dirty = w.dirty[:0]
	return w.img.Sync()
}

// Close implements io.Closer; unsynced writes stay out of the image.
func (w *file) Close() error {
	w.fs.mu.Lock()
	delete(w.fs.pending, w)
	w.fs.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.f.Close(), w.img.Close())
}
