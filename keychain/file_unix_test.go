//go:build unix

package keychain

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestFileIsPrivate(t *testing.T) {
	// A permissive umask must not leak into the secrets file.
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	s, path := newTestFile(t)
	if err := s.Set("k", "v"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + ".lock"} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", filepath.Base(p), perm)
		}
	}
	if info, err := os.Stat(filepath.Dir(path)); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("created home directory: %v, %v; want mode 0700", info.Mode(), err)
	}
}

func TestFileRefusesOpenPermissions(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		path := filepath.Join(t.TempDir(), SecretsFile)
		if err := os.WriteFile(path, []byte(`{"version":1,"secrets":{"k":"sk-leaky"}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := NewFile(path)
		if err == nil {
			t.Fatalf("NewFile accepted a file with mode %04o", mode)
		}
		msg := err.Error()
		if !strings.Contains(msg, "chmod 600 "+path) || strings.Contains(msg, "\n") || strings.Contains(msg, "sk-leaky") {
			t.Fatalf("mode %04o: error %q is not one line saying chmod 600 %s", mode, msg, path)
		}
	}
}

// A file that becomes readable by others while subpool runs is refused from then on.
func TestFileRefusesPermissionsChangedLater(t *testing.T) {
	s, path := newTestFile(t)
	if err := s.Set("k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("k"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("Get from a 0644 file: %v", err)
	}
	if err := s.Set("k2", "v"); err == nil {
		t.Fatal("Set into a 0644 file succeeded")
	}
}
