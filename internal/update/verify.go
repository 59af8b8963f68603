package update

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// SumsName and SigName are the checksum list every release carries and
// its detached signature: base64 of ed25519 over SHA256SUMS's bytes.
const (
	SumsName = "SHA256SUMS"
	SigName  = "SHA256SUMS.sig"
)

// Sign is the signature SigName holds for sums.
func Sign(key ed25519.PrivateKey, sums []byte) []byte {
	return []byte(base64.StdEncoding.EncodeToString(ed25519.Sign(key, sums)) + "\n")
}

// VerifySums checks sig (SigName's text) over sums with pub.
func VerifySums(pub ed25519.PublicKey, sums, sig []byte) error {
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(sig)))
	if err != nil || len(raw) != ed25519.SignatureSize {
		return errors.New(SigName + " is not a base64 ed25519 signature")
	}
	if !ed25519.Verify(pub, sums, raw) {
		return errors.New(SigName + " does not verify against this build's release key")
	}
	return nil
}

// SumFor is name's SHA-256 as sha256sum wrote it in sums ("HEX  NAME",
// or "HEX *NAME" in binary mode).
func SumFor(sums []byte, name string) ([]byte, error) {
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		hexSum, file, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.TrimPrefix(strings.TrimPrefix(file, " "), "*") != name {
			continue
		}
		sum, err := hex.DecodeString(hexSum)
		if err != nil || len(sum) != 32 {
			return nil, fmt.Errorf("%s's line for %s is not a SHA-256", SumsName, name)
		}
		return sum, nil
	}
	return nil, fmt.Errorf("%s lists no %s", SumsName, name)
}
