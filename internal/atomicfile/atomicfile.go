// Package atomicfile replaces files so that a reader, or a crash, sees the
// old content or the new, never a mix. subpool rewrites its state, its
// secrets file, the token files of the CLIs it imported from and service
// unit files this way.
package atomicfile

import (
	"os"
	"path/filepath"
	"runtime"
)

// Write replaces path with data, mode perm. The data goes to a temporary
// file in the same folder (rename is only atomic within one file system),
// is synced, renamed over path, and the folder is synced so the rename
// itself survives a power loss. On failure the temporary file is removed
// and path is untouched.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// Before the data goes in: a secret is never readable by others, not
	// even for a moment.
	if err := f.Chmod(perm); err != nil && runtime.GOOS != "windows" {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	// Windows cannot open a folder to sync it; its rename is durable as is.
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
