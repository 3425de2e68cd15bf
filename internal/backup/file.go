package backup

import (
	"fmt"
	"io"
	"os"
)

// WriteFile makes the backup file path with write, which writes the whole file to the
// writer it is given: into path+".tmp" (created, mode 0600), synced, checked by Verify
// and then renamed to path. path must not exist (an error wrapping os.ErrExist). On any error nothing is left behind:
// the temporary file is removed and path not made.
func WriteFile(path string, write func(io.Writer) error) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("backup file %s: %w", path, os.ErrExist)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_, err = Verify(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
