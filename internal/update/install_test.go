package update

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func testKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

// installed puts bin at DIR/subpool as a tarball install would and
// returns its path.
func installed(t *testing.T, bin []byte) string {
	exe := filepath.Join(t.TempDir(), "subpool"+exeSuffix())
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestUpdate runs `subpool update`'s one call against a feed on loopback
// for each case the issue names: only the verified newer archive
// replaces the installed binary, and every refusal is one line saying
// why.
func TestUpdate(t *testing.T) {
	pub, priv := testKey(t)
	_, otherKey := testKey(t)
	old, newer := fakeBinary(t, "0.1.0"), fakeBinary(t, "0.2.0")
	cases := []struct {
		name    string
		rel     func() release
		trunc   bool   // the archive's download breaks off halfway
		want    []byte // the binary at Exe afterwards
		refusal string // in the one-line error; "" for none
		notice  string
	}{
		{name: "newer", rel: func() release { return newRelease(t, "v0.2.0", newer, priv) },
			want: newer, notice: "subpool 0.2.0 is out (this is 0.1.0)"},
		{name: "same", rel: func() release { return newRelease(t, "v0.1.0", old, priv) },
			want: old, notice: "subpool 0.1.0 is the latest release"},
		{name: "older", rel: func() release { return newRelease(t, "v0.0.9", fakeBinary(t, "0.0.9"), priv) },
			want: old, notice: "this build (0.1.0) is newer than the latest release (0.0.9)"},
		{name: "bad signature", rel: func() release { return newRelease(t, "v0.2.0", newer, otherKey) },
			want: old, refusal: "SHA256SUMS.sig does not verify against this build's release key; nothing was replaced"},
		{name: "bad checksum", rel: func() release {
			r := newRelease(t, "v0.2.0", newer, priv)
			for n, b := range r.files {
				if n != SumsName && n != SigName {
					r.files[n] = append(bytes.Clone(b), 0) // after SHA256SUMS was signed
				}
			}
			return r
		}, want: old, refusal: "is not the"},
		{name: "truncated download", rel: func() release { return newRelease(t, "v0.2.0", newer, priv) },
			trunc: true, want: old, refusal: "broke off after"},
		{name: "new binary fails to start", rel: func() release { return newRelease(t, "v0.2.0", fakeBinary(t, "broken"), priv) },
			want: old, refusal: "the new binary did not start"},
		{name: "new binary is another version", rel: func() release { return newRelease(t, "v0.2.0", fakeBinary(t, "0.3.0"), priv) },
			want: old, refusal: `says "subpool 0.3.0", not version 0.2.0; the old one is back`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rel := c.rel()
			f := serveFeed(t, rel)
			if c.trunc {
				f.truncate, _ = (Installer{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}).archive(rel.tag)
			}
			exe := installed(t, old)
			in := Installer{Key: pub, Exe: exe, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
			n, err := in.Update(context.Background(), f.URL(), "v0.1.0")
			switch {
			case c.refusal == "" && err != nil:
				t.Fatalf("Update: %v", err)
			case c.refusal != "" && (err == nil || !strings.Contains(err.Error(), c.refusal)):
				t.Fatalf("Update = %v, want a refusal with %q", err, c.refusal)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("the refusal is more than one line: %q", err)
			}
			if c.notice != "" && !strings.HasPrefix(n.String(), c.notice) {
				t.Errorf("notice %q, want %q", n, c.notice)
			}
			if got, _ := os.ReadFile(exe); !bytes.Equal(got, c.want) {
				t.Errorf("the binary at %s is not the one expected (%d bytes, want %d)", exe, len(got), len(c.want))
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(exe), "*")); len(left) != 1 {
				t.Errorf("left beside the binary: %v", left)
			}
		})
	}
}

// TestUpdateSendsOnlyTheFeedRequest: a check is one GET of the feed URL
// as configured, with nothing added that could tell who asks.
func TestUpdateSendsOnlyTheFeedRequest(t *testing.T) {
	_, priv := testKey(t)
	f := serveFeed(t, newRelease(t, "v0.2.0", fakeBinary(t, "0.2.0"), priv))
	n, _, err := Client{}.Check(context.Background(), f.URL(), "v0.1.0")
	if err != nil || !n.Newer {
		t.Fatalf("Check = %+v, %v", n, err)
	}
	if len(f.requests) != 1 || f.requests[0] != "/repos/subpool/subpool/releases/latest" {
		t.Fatalf("requests %q, want only the feed's path", f.requests)
	}
}

// TestUpdateDevBuildInstallsNothing: a build that is not a release cannot
// say whether the feed's is newer, so it is told where to get it.
func TestUpdateDevBuildInstallsNothing(t *testing.T) {
	pub, priv := testKey(t)
	f := serveFeed(t, newRelease(t, "v0.2.0", fakeBinary(t, "0.2.0"), priv))
	old := fakeBinary(t, "0.1.0")
	exe := installed(t, old)
	in := Installer{Key: pub, Exe: exe, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	n, err := in.Update(context.Background(), f.URL(), "dev")
	if err == nil || !strings.Contains(err.Error(), "this build (dev) is not a release") {
		t.Fatalf("Update = %v", err)
	}
	if !strings.HasPrefix(n.String(), "this build (dev) is not a release; the latest release is 0.2.0") {
		t.Errorf("notice %q", n)
	}
	if got, _ := os.ReadFile(exe); !bytes.Equal(got, old) {
		t.Error("a dev build's binary was replaced")
	}
}
