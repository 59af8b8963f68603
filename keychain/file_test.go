package keychain

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func newTestFile(t *testing.T) (Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "home", SecretsFile)
	s, err := NewFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

func TestFileRoundTrip(t *testing.T) {
	s, path := newTestFile(t)
	if s.Name() != "file" {
		t.Fatalf("Name = %q", s.Name())
	}
	if _, err := s.Get("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get before any Set: %v, want ErrNotFound", err)
	}
	big := multibyte(200 << 10)
	for key, v := range map[string]string{"k": "sk-1", "big": big, "empty": "", "html": `<&>"\`} {
		if err := s.Set(key, v); err != nil {
			t.Fatal(err)
		}
	}
	reopened, err := NewFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"k": "sk-1", "big": big, "empty": "", "html": `<&>"\`} {
		if got, err := reopened.Get(key); err != nil || got != want {
			t.Fatalf("Get(%q) after reopening = %d bytes, %v", key, len(got), err)
		}
	}
	if err := s.Delete("k"); err != nil {
		t.Fatal(err)
	}
	if _, err := reopened.Get("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get through another Store after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete of a missing key: %v, want ErrNotFound", err)
	}
}

// After writes, the directory holds the secrets file and its lock file, nothing half-written.
func TestFileLeavesNoTemporaryFiles(t *testing.T) {
	s, path := newTestFile(t)
	for i := range 20 {
		if err := s.Set("k"+strconv.Itoa(i), secretOf(i*1000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete("k3"); err != nil {
		t.Fatal(err)
	}
	if got, want := dirNames(t, filepath.Dir(path)), []string{SecretsFile, SecretsFile + ".lock"}; !slices.Equal(got, want) {
		t.Fatalf("directory holds %v, want %v", got, want)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A write that fails halfway (disk full, killed) leaves the previous file whole and no
// temporary file behind.
func TestFileAtomicWriteFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, SecretsFile)
	if err := writeFileAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "old content\n")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	errDiskFull := errors.New("no space left on device")
	err := writeFileAtomic(path, func(w io.Writer) error {
		if _, err := io.WriteString(w, "new cont"); err != nil {
			return err
		}
		return errDiskFull
	})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("writeFileAtomic: %v, want the writer's error", err)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != "old content\n" {
		t.Fatalf("file after a failed write = %q, %v; want the old content", data, err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{SecretsFile}) {
		t.Fatalf("directory holds %v after a failed write", got)
	}
}

// Two Stores on one path, as two processes would have, each re-read the file under the lock
// before writing, so neither loses the other's keys. They share a process here, which still
// exercises the file lock: flock and LockFileEx belong to the open file, not the process.
func TestFileTwoStoresDoNotLoseWrites(t *testing.T) {
	a, path := newTestFile(t)
	b, err := NewFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	for i, s := range []Store{a, b} {
		wg.Go(func() {
			for j := range n {
				if err := s.Set(fmt.Sprintf("s%d-%d", i, j), "v"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for i := range 2 {
		for j := range n {
			if _, err := a.Get(fmt.Sprintf("s%d-%d", i, j)); err != nil {
				t.Fatalf("key s%d-%d lost: %v", i, j, err)
			}
		}
	}
}

// The same with real processes: this test binary re-run as writers.
func TestFileProcessesDoNotLoseWrites(t *testing.T) {
	_, path := newTestFile(t)
	const procs, keys = 4, 25
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
			cmd.Env = append(os.Environ(), "KEYCHAIN_HELPER=file-writer",
				"KEYCHAIN_HELPER_PATH="+path, "KEYCHAIN_HELPER_PREFIX=p"+strconv.Itoa(p),
				"KEYCHAIN_HELPER_KEYS="+strconv.Itoa(keys))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("writer %d: %v\n%s", p, err, out)
			}
		})
	}
	wg.Wait()
	s, err := NewFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for p := range procs {
		for k := range keys {
			if _, err := s.Get(fmt.Sprintf("p%d-%d", p, k)); err != nil {
				t.Fatalf("key p%d-%d lost: %v", p, k, err)
			}
		}
	}
}

// TestHelperProcess is not a test: other tests run this binary with KEYCHAIN_HELPER set to
// get a second process.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv("KEYCHAIN_HELPER") {
	case "":
		t.Skip("helper process for other tests")
	case "file-writer":
		s, err := NewFile(os.Getenv("KEYCHAIN_HELPER_PATH"))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(os.Getenv("KEYCHAIN_HELPER_KEYS"))
		for k := range n {
			if err := s.Set(fmt.Sprintf("%s-%d", os.Getenv("KEYCHAIN_HELPER_PREFIX"), k), "v"); err != nil {
				t.Fatal(err)
			}
		}
	default:
		helperProcess(t, os.Getenv("KEYCHAIN_HELPER"))
	}
}

func TestFileRejectsBadContent(t *testing.T) {
	tests := []struct {
		name, content string
	}{
		{"not json", "secret-value-in-plain-text"},
		{"truncated", `{"version":1,"secrets":{"k":"sk-truncat`},
		{"wrong type", `{"version":1,"secrets":{"k":12345}}`},
		{"unknown version", `{"version":2,"secrets":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), SecretsFile)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := NewFile(path)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("NewFile: %v, want ErrCorrupt", err)
			}
			for _, secret := range []string{"secret-value", "sk-truncat", "12345"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error quotes the file's content: %v", err)
				}
			}
		})
	}
}

// A missing or empty file is an empty store: the user may create it with touch.
func TestFileEmptyFileIsEmptyStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), SecretsFile)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get: %v, want ErrNotFound", err)
	}
	if err := s.Set("k", "v"); err != nil {
		t.Fatal(err)
	}
}

func TestFileRejectsDirectory(t *testing.T) {
	if _, err := NewFile(t.TempDir()); err == nil {
		t.Fatal("NewFile accepted a directory")
	}
}

func TestOpen(t *testing.T) {
	for _, backend := range []string{"", "os"} {
		s, warning, err := Open(backend, t.TempDir())
		if err != nil || s.Name() != "os" || warning != "" {
			t.Fatalf("Open(%q) = %v, %q, %v; want the OS store and no warning", backend, s, warning, err)
		}
	}

	home := t.TempDir()
	s, warning, err := Open("file", home)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, "secrets.json")
	if s.Name() != "file" || !strings.Contains(warning, path) || !strings.Contains(warning, "0600") || !strings.Contains(warning, "prefer the OS keychain") {
		t.Fatalf("Open(file) = %s store, warning %q", s.Name(), warning)
	}
	if err := s.Set("k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file backend did not write %s: %v", path, err)
	}

	if _, _, err := Open("file", ""); err == nil {
		t.Fatal(`Open("file", "") succeeded without a home`)
	}

	for _, backend := range []string{"memory", "keyring", "OS", " os"} {
		_, _, err := Open(backend, home)
		if err == nil {
			t.Fatalf("Open(%q) succeeded", backend)
		}
		for _, want := range []string{"[keychain] backend", `"os"`, `"file"`, strconv.Quote(backend)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Open(%q) error %q does not mention %s", backend, err, want)
			}
		}
	}
}

func TestMemory(t *testing.T) {
	s := NewMemory()
	if s.Name() != "memory" {
		t.Fatalf("Name = %q", s.Name())
	}
	if _, err := s.Get("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get: %v, want ErrNotFound", err)
	}
	if err := s.Set("k", "v"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get("k"); err != nil || got != "v" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if err := s.Delete("k"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete of a missing key: %v, want ErrNotFound", err)
	}
}
