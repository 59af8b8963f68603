// Package keychain is subpool's secret store: API keys, OAuth tokens and the client key.
//
// Three backends share one small interface:
//
//   - "os" (NewOS): the OS keychain through go-keyring (Secret Service on Linux, Keychain on
//     macOS, Credential Manager on Windows). Every call has a timeout, because a locked
//     keychain can block forever, and secrets are split into small items so that the
//     smallest platform limit (Windows, 2560 bytes) never applies.
//   - "file" (NewFile): an explicit choice for headless machines without a Secret Service: one
//     0600 JSON file, written atomically and locked against other processes.
//   - "memory" (NewMemory): for `subpool demo` and tests; nothing leaves the process.
//
// No backend ever falls back to another on its own: the user picks one in config.toml, and
// Open returns the chosen one or an error.
//
// Error messages name keys, never secrets.
package keychain

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Service is the service name under which subpool's items live in the OS keychain.
const Service = "subpool"

// DefaultTimeout bounds each OS keychain call when NewOS is given no timeout. Three seconds
// is what GitHub's CLI uses: long enough for a busy Secret Service, short enough that a
// locked one is reported before the user gives up.
const DefaultTimeout = 3 * time.Second

var (
	// ErrNotFound is returned by Get and Delete for a key that holds no secret.
	ErrNotFound = errors.New("secret not found")
	// ErrTimeout means the OS keychain did not answer in time; usually it is locked and waiting
	// for a password nobody types, or it waits on a prompt that cannot be shown.
	ErrTimeout = errors.New("the OS keychain did not answer in time")
	// ErrUnavailable means the OS keychain cannot be used at all: no D-Bus session bus, no
	// Secret Service on it, or a locked keychain whose unlock prompt was refused or could not
	// be shown.
	ErrUnavailable = errors.New("the OS keychain is unavailable")
	// ErrCorrupt means a stored value cannot be read back: a part of a split secret is
	// missing or does not match, or the secrets file is not valid.
	ErrCorrupt = errors.New("stored secret is unreadable")
)

// Store keeps secrets by key. Implementations are safe for concurrent use.
//
// Keys are short names chosen by subpool (for example "cred/anthropic/work"); they are not
// secret and may appear in errors and in keychain UIs. A key must be non-empty and must not
// contain '#', which the OS backend reserves for the parts of a split secret.
type Store interface {
	// Get returns the secret stored under key, or an error wrapping ErrNotFound.
	Get(key string) (string, error)
	// Set stores secret under key, replacing any previous value.
	Set(key, secret string) error
	// Delete removes key; a missing key gives an error wrapping ErrNotFound.
	Delete(key string) error
	// Name is "os", "file" or "memory", for messages.
	Name() string
}

// Backend names accepted by Open, as written in config.toml.
const (
	BackendOS   = "os"
	BackendFile = "file"
)

// SecretsFile is the file name of the file backend inside the subpool home.
const SecretsFile = "secrets.json"

// Open returns the backend named by `[keychain] backend` in config.toml: "os" (also for "")
// or "file", the latter as SecretsFile in home. For "file" it also returns a warning that the
// caller should log at start, because a plain file is weaker than the OS keychain and the
// user should not forget they chose it.
//
// Open does not touch the OS keychain, so it never blocks; the first Get or Set reports a
// locked or missing keychain.
func Open(backend, home string) (s Store, warning string, err error) {
	switch backend {
	case "", BackendOS:
		return NewOS(Service, DefaultTimeout), "", nil
	case BackendFile:
		if home == "" {
			// A relative "secrets.json" would land wherever subpool was started.
			return nil, "", errors.New("keychain: the file backend needs the subpool home directory, and none was given")
		}
		path := filepath.Join(home, SecretsFile)
		s, err := NewFile(path)
		if err != nil {
			return nil, "", err
		}
		warning = fmt.Sprintf("secrets are stored in a plain 0600 file %s ([keychain] backend = %q); prefer the OS keychain where one is available", path, BackendFile)
		return s, warning, nil
	default:
		return nil, "", fmt.Errorf("keychain: unknown [keychain] backend %q in config.toml: use %q (the OS keychain, default) or %q (a 0600 file in the subpool home)", backend, BackendOS, BackendFile)
	}
}

// checkKey enforces the key rules of Store on every backend, so code that works against the
// memory store in the demo does not fail later against the OS keychain.
func checkKey(key string) error {
	if key == "" {
		return errors.New("keychain: empty key")
	}
	if strings.ContainsRune(key, '#') {
		return fmt.Errorf("keychain: key %q contains '#', which is reserved for the parts of a split secret", key)
	}
	return nil
}
