package daemon

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

// ReadAdminToken returns the home's admin token; a home whose proxy never
// started has none.
func ReadAdminToken(home string) (string, error) { return adminToken(home, false) }
