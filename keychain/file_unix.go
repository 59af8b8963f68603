//go:build unix

package keychain

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// lockFile blocks until it holds an flock on f. flock locks belong to the open file, so two
// Stores in one process exclude each other just as two processes do.
func lockFile(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// checkPrivate refuses a secrets file that group or others may access. The message is the
// one-line fix, as ssh gives for a private key with loose permissions.
func checkPrivate(path string, info fs.FileInfo) error {
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("keychain: %s has mode %04o, so other users may read the secrets in it; run: chmod 600 %s", path, perm, path)
	}
	return nil
}
