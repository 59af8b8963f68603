package update

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
)

// releaseKey is the public half of the key that signs every release's
// SHA256SUMS (SHA256SUMS.sig). Its private half lives with the release
// workflow's secrets (SUBPOOL_SIGNING_KEY), never in the repository.
const releaseKey = "Ocn+JfiT9GvYsiguR/JRbPSdPbSLNAMqV9l/4wbPYp4="

// publicKey is the key this build trusts. A `make dist` without
// SUBPOOL_SIGNING_KEY signs with a throwaway key and sets this to its
// public half (-ldflags -X), so such a build trusts only its own
// throwaway releases and says so in `subpool version`.
var publicKey = releaseKey

// PublicKey is the key updates are verified with.
func PublicKey() (ed25519.PublicKey, error) {
	return ParseKey(publicKey)
}

// Throwaway reports whether this build trusts a key other than the
// project's release key (a local `make dist` without the signing key).
func Throwaway() bool { return publicKey != releaseKey }

// ParseKey reads a base64 ed25519 public key.
func ParseKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("the built-in release key is not a base64 ed25519 public key (%d bytes)", len(b))
	}
	return ed25519.PublicKey(b), nil
}

// ParsePrivateKey reads SUBPOOL_SIGNING_KEY's form: base64 of the 32-byte
// seed or of the 64-byte private key.
func ParsePrivateKey(s string) (ed25519.PrivateKey, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("the signing key is not base64: %v", err)
	case len(b) == ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(b), nil
	case len(b) == ed25519.PrivateKeySize:
		return ed25519.PrivateKey(b), nil
	}
	return nil, fmt.Errorf("the signing key is %d bytes; want an ed25519 seed (32) or private key (64)", len(b))
}
