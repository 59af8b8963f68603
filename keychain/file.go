package keychain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/subpool/subpool/internal/atomicfile"
)

// fileFormat is the on-disk shape of the file backend. The version lets a later subpool
// change the format without misreading an old file.
type fileFormat struct {
	Version int               `json:"version"`
	Secrets map[string]string `json:"secrets"`
}

const fileVersion = 1

// NewFile returns a Store that keeps all secrets in one JSON file at path, readable and
// writable by its owner only. It is the explicit choice for headless machines without a
// Secret Service; the OS keychain is better wherever there is one.
//
// Every write replaces the file atomically (temporary file in the same directory, fsync,
// rename, directory fsync) under an exclusive lock on path+".lock", after reading the file
// again, so two processes writing different keys never lose each other's writes. Reads take a
// shared lock: on Windows a file open for reading cannot be replaced.
//
// On Unix, NewFile refuses a file that its group or others may read, as ssh does with keys,
// and so does every later read. On Windows the file's ACL comes from the user's profile
// directory and no mode bits are checked. NewFile creates the directory (0700) and the lock
// file if needed. The lock file is never removed: removing a lock file while another process
// waits on it would let two writers in.
func NewFile(path string) (Store, error) {
	f := &fileStore{path: path}
	// Read once now so a bad file is reported at start, not at the first request.
	err := f.locked(false, func() error {
		_, err := f.load()
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

type fileStore struct {
	path string
	// mu orders this process's own calls; the file lock orders processes. Both are needed:
	// flock is per open file, and Windows' LockFileEx is not reentrant either.
	mu sync.Mutex
}

func (f *fileStore) Name() string { return "file" }

func (f *fileStore) Get(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var m map[string]string
	err := f.locked(false, func() (err error) {
		m, err = f.load()
		return err
	})
	if err != nil {
		return "", err
	}
	v, ok := m[key]
	if !ok {
		return "", fmt.Errorf("keychain: no secret %q in %s: %w", key, f.path, ErrNotFound)
	}
	return v, nil
}

func (f *fileStore) Set(key, secret string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return f.update(func(m map[string]string) error {
		m[key] = secret
		return nil
	})
}

func (f *fileStore) Delete(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return f.update(func(m map[string]string) error {
		if _, ok := m[key]; !ok {
			return fmt.Errorf("keychain: no secret %q in %s: %w", key, f.path, ErrNotFound)
		}
		delete(m, key)
		return nil
	})
}

// update re-reads the file under the exclusive lock, applies change and writes the result, so
// a write by another process since our last read is kept. If change fails, nothing is written.
func (f *fileStore) update(change func(map[string]string) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.locked(true, func() error {
		m, err := f.load()
		if err != nil {
			return err
		}
		if err := change(m); err != nil {
			return err
		}
		data, err := json.MarshalIndent(fileFormat{Version: fileVersion, Secrets: m}, "", "  ")
		if err != nil {
			return fmt.Errorf("keychain: encoding %s: %w", f.path, err)
		}
		data = append(data, '\n')
		return writeFileAtomic(f.path, func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		})
	})
}

// locked runs fn while holding the lock file, creating the directory if needed.
func (f *fileStore) locked(exclusive bool, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("keychain: %w", err)
	}
	lf, err := os.OpenFile(f.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("keychain: opening lock file: %w", err)
	}
	defer lf.Close()
	if err := lockFile(lf, exclusive); err != nil {
		return fmt.Errorf("keychain: locking %s: %w", lf.Name(), err)
	}
	// Closing the file releases the lock too; the explicit unlock just makes it prompt.
	defer unlockFile(lf)
	return fn()
}

// load reads the secrets file; a missing or empty file is an empty store.
func (f *fileStore) load() (map[string]string, error) {
	fh, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("keychain: %w", err)
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("keychain: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("keychain: %s is not a regular file", f.path)
	}
	if err := checkPrivate(f.path, info); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(fh)
	if err != nil {
		return nil, fmt.Errorf("keychain: reading %s: %w", f.path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]string{}, nil
	}
	var ff fileFormat
	if err := json.Unmarshal(data, &ff); err != nil {
		// Not the decoder's message: a syntax error quotes the offending character, which may
		// belong to a secret.
		where := ""
		var se *json.SyntaxError
		if errors.As(err, &se) {
			where = fmt.Sprintf(" at byte %d", se.Offset)
		}
		return nil, fmt.Errorf("keychain: %s is not a valid secrets file (bad JSON%s); fix or remove it: %w", f.path, where, ErrCorrupt)
	}
	if ff.Version != fileVersion {
		return nil, fmt.Errorf("keychain: %s has format version %d; this subpool reads version %d: %w", f.path, ff.Version, fileVersion, ErrCorrupt)
	}
	if ff.Secrets == nil {
		ff.Secrets = map[string]string{}
	}
	return ff.Secrets, nil
}

// writeFileAtomic replaces path (0600) with what write produces, through
// atomicfile: a reader or a crash sees the old content or the new, never a
// mix, and a writer that fails leaves the old file alone.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return fmt.Errorf("keychain: writing %s: %w", path, err)
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("keychain: %w", err)
	}
	return nil
}
