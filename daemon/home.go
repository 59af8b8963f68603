package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/subpool/subpool/internal/atomicfile"
)

// Files in the home. Only admin-token is a secret, and it only guards the
// admin API of a proxy that answers on loopback.
const (
	adminTokenFile  = "admin-token"
	stateFile       = "state.json"
	lockFile        = "subpool.lock"
	credentialsFile = "credentials.json"
)

// resolveHome: --home, else $SUBPOOL_HOME, else the OS config dir; created
// if missing.
func resolveHome(flagHome string) (string, error) {
	abs, err := homePath(flagHome)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("cannot create home %s: %v", abs, err)
	}
	return abs, nil
}

// homePath is resolveHome without creating anything.
func homePath(flagHome string) (string, error) {
	h := flagHome
	if h == "" {
		h = os.Getenv("SUBPOOL_HOME")
	}
	if h == "" {
		d, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("cannot find your config folder (%v); pass --home DIR", err)
		}
		h = filepath.Join(d, "subpool")
	}
	abs, err := filepath.Abs(h)
	if err != nil {
		return "", fmt.Errorf("home %q: %v", h, err)
	}
	return abs, nil
}

// adminToken returns the home's admin token, creating it (0600) once.
func adminToken(home string, create bool) (string, error) {
	p := filepath.Join(home, adminTokenFile)
	b, err := os.ReadFile(p)
	if err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("cannot read %s: %v", p, err)
	}
	if !create {
		return "", fmt.Errorf("no admin token in %s: start the proxy once with `subpool serve`", home)
	}
	tok := randomToken(32)
	if err := writeFileAtomic(p, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	return tok, nil
}

func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

// writeFileAtomic is atomicfile.Write with the error a person reads.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := atomicfile.Write(path, data, perm); err != nil {
		return fmt.Errorf("cannot write %s: %v", path, err)
	}
	return nil
}
