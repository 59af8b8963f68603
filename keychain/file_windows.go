package keychain

import (
	"io/fs"
	"math"
	"os"

	"golang.org/x/sys/windows"
)

// lockFile blocks until it holds a LockFileEx lock on the first byte range of f; like flock
// on Unix it belongs to the open handle.
func lockFile(f *os.File, exclusive bool) error {
	var flags uint32
	if exclusive {
		flags = windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	ol := new(windows.Overlapped)
	return windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, math.MaxUint32, math.MaxUint32, ol)
}

func unlockFile(f *os.File) error {
	ol := new(windows.Overlapped)
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, math.MaxUint32, math.MaxUint32, ol)
}

// checkPrivate has no mode bits to check on Windows: Go reports 0666 or 0444 whatever the
// ACL says, and the file inherits the ACL of the user's profile directory.
func checkPrivate(string, fs.FileInfo) error { return nil }
