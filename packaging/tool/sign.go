package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/subpool/subpool/internal/update"
)

// keygen prints a throwaway key pair: the private seed, then the public
// key, both base64, one a line.
func keygen(w io.Writer) error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, base64.StdEncoding.EncodeToString(priv.Seed()))
	fmt.Fprintln(w, base64.StdEncoding.EncodeToString(pub))
	return nil
}

func signingKey() (ed25519.PrivateKey, error) {
	s := strings.TrimSpace(os.Getenv("SUBPOOL_SIGNING_KEY"))
	if s == "" {
		return nil, fmt.Errorf("SUBPOOL_SIGNING_KEY is empty")
	}
	return update.ParsePrivateKey(s)
}

// pubkey prints SUBPOOL_SIGNING_KEY's public half, which the build bakes
// in when it is not the project's release key.
func pubkey(w io.Writer) error {
	k, err := signingKey()
	if err != nil {
		return err
	}
	fmt.Fprintln(w, base64.StdEncoding.EncodeToString(k.Public().(ed25519.PublicKey)))
	return nil
}

// signDir writes dir/SHA256SUMS over every regular file in dir, in the
// form `sha256sum -c` reads, and dir/SHA256SUMS.sig over it.
func signDir(dir string) error {
	key, err := signingKey()
	if err != nil {
		return err
	}
	sums, err := sumDir(dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, update.SumsName), sums, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, update.SigName), update.Sign(key, sums), 0o644)
}

func sumDir(dir string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != update.SumsName && e.Name() != update.SigName && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		sum, err := fileSHA256(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return []byte(b.String()), nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
