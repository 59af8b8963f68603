//go:build unix

package history

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Every file of the history is 0600, the -wal and -shm SQLite makes
// beside it too, in a home made beforehand at 0755 under the usual umask
// (issue 43: they were 0644 while everything else in the home was 0600).
// A -wal or -shm an older subpool left at 0644 is made 0600 at open.
func TestHistoryFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	home := t.TempDir()
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, FileName)
	d, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Emit(finished(t0, "m"))
	sync_(t, d)
	for _, f := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(path + f)
		if err != nil {
			t.Fatalf("%s%s: %v (an open WAL database has it)", FileName, f, err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s%s: mode %v, want 0600", FileName, f, m)
		}
	}
	d.Close()

	for _, f := range []string{"-wal", "-shm"} {
		if err := os.WriteFile(path+f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path+f, 0o644)
	}
	d, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.Emit(finished(t0, "m"))
	sync_(t, d)
	entries, _ := os.ReadDir(home)
	for _, e := range entries {
		fi, _ := e.Info()
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s after reopening: mode %v, want 0600", e.Name(), m)
		}
	}
	if n := count(t, d, "1=1"); n != 2 {
		t.Errorf("rows = %d, want 2", n)
	}
}
