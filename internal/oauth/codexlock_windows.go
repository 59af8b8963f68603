package oauth

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// tryFlock takes an exclusive lock on all of f without waiting, as Rust's
// file locks do here (LockFileEx over the whole range): false when
// another handle holds it.
func tryFlock(f *os.File) (bool, error) {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, ^uint32(0), ^uint32(0), &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return err == nil, err
}
