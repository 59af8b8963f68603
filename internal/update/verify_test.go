package update

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestVerifySums(t *testing.T) {
	pub, priv := testKey(t)
	sums := []byte("00  a\n")
	sig := Sign(priv, sums)
	if err := VerifySums(pub, sums, sig); err != nil {
		t.Fatalf("a good signature: %v", err)
	}
	for name, c := range map[string]struct{ sums, sig string }{
		"other sums": {"01  a\n", string(sig)},
		"not base64": {string(sums), "!!"},
		"short":      {string(sums), "AAAA"},
		"empty":      {string(sums), ""},
	} {
		if err := VerifySums(pub, []byte(c.sums), []byte(c.sig)); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestSumFor(t *testing.T) {
	h := strings.Repeat("ab", 32)
	sums := []byte(h + "  subpool_1_linux_amd64.tar.gz\n" + strings.Repeat("cd", 32) + " *subpool.zip\n" + "zz  bad\n")
	if s, err := SumFor(sums, "subpool_1_linux_amd64.tar.gz"); err != nil || s[0] != 0xab {
		t.Errorf("text mode: %x, %v", s, err)
	}
	if s, err := SumFor(sums, "subpool.zip"); err != nil || s[0] != 0xcd {
		t.Errorf("binary mode: %x, %v", s, err)
	}
	if _, err := SumFor(sums, "subpool_1_linux_amd64"); err == nil || err.Error() != "SHA256SUMS lists no subpool_1_linux_amd64" {
		t.Errorf("a name it does not list: %v", err)
	}
	if _, err := SumFor(sums, "bad"); err == nil || !strings.Contains(err.Error(), "not a SHA-256") {
		t.Errorf("a bad line: %v", err)
	}
}

func TestParsePrivateKey(t *testing.T) {
	_, priv := testKey(t)
	for _, s := range []string{b64(priv.Seed()), b64(priv)} {
		k, err := ParsePrivateKey(s)
		if err != nil || !k.Equal(priv) {
			t.Errorf("ParsePrivateKey: %v", err)
		}
	}
	if _, err := ParsePrivateKey(b64([]byte("short"))); err == nil {
		t.Error("a 5-byte key was read")
	}
	if _, err := PublicKey(); err != nil {
		t.Errorf("the built-in key: %v", err)
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
