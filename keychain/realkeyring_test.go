package keychain

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/zalando/go-keyring"
)

// keyringTestsEnv turns on the tests against the real OS keychain. scripts/keyring-test.sh
// sets it inside a private D-Bus session with a throwaway gnome-keyring; `make test` runs
// `go test ./...` through that script, so CI always runs them.
const keyringTestsEnv = "SUBPOOL_KEYRING_TESTS"

func requireRealKeychain(t *testing.T) {
	t.Helper()
	if os.Getenv(keyringTestsEnv) != "1" {
		t.Skipf("OS keychain tests are off; run them with scripts/keyring-test.sh go test ./keychain/ (it starts a throwaway gnome-keyring and sets %s=1)", keyringTestsEnv)
	}
	if runtime.GOOS == "linux" && os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		t.Fatalf("%s=1 but DBUS_SESSION_BUS_ADDRESS is unset, so there is no Secret Service to test against; run the tests via scripts/keyring-test.sh", keyringTestsEnv)
	}
}

// realOS returns the OS keychain under a service name of its own, so the test neither sees
// nor touches real subpool items, and removes everything stored under it at the end. raw
// reads single items, to check how a secret was split.
func realOS(t *testing.T, timeout time.Duration) (s Store, raw *osItems) {
	t.Helper()
	requireRealKeychain(t)
	b := make([]byte, 6)
	rand.Read(b)
	service := "subpool-test-" + hex.EncodeToString(b)
	raw = &osItems{service: service, timeout: DefaultTimeout, kr: goKeyring{}}
	t.Cleanup(func() {
		// Through call, so a keychain left locked by a failed test cannot hang the cleanup.
		_, err := raw.call("", "", func() (string, error) {
			return "", keyring.DeleteAll(service)
		})
		if err != nil {
			t.Errorf("cleanup of %s: %v", service, err)
		}
	})
	return NewOS(service, timeout), raw
}

func TestOSKeychainRoundTrip(t *testing.T) {
	s, _ := realOS(t, DefaultTimeout)
	if _, err := s.Get("cred/a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	if err := s.Delete("cred/a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete of a missing key: %v, want ErrNotFound", err)
	}
	for _, v := range []string{"sk-ant-api03-first", "sk-ant-api03-second"} {
		if err := s.Set("cred/a", v); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get("cred/a"); err != nil || got != v {
			t.Fatalf("Get = %q, %v; want %q", got, err, v)
		}
	}
	if err := s.Delete("cred/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("cred/a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
}

// Large secrets are split into items of at most maxItemBytes, and reassembled.
func TestOSKeychainLargeSecrets(t *testing.T) {
	s, raw := realOS(t, DefaultTimeout)
	for _, secret := range []string{multibyte(10 << 10), secretOf(200 << 10)} {
		if err := s.Set("big", secret); err != nil {
			t.Fatalf("Set %d bytes: %v", len(secret), err)
		}
		got, err := s.Get("big")
		if err != nil || got != secret {
			t.Fatalf("Get %d bytes = %d bytes, %v", len(secret), len(got), err)
		}
		h, _, isHeader, err := parseHeader(mustRawGet(t, raw, "big"))
		if !isHeader || err != nil {
			t.Fatalf("the first item of a %d-byte secret is not a header (%v)", len(secret), err)
		}
		for i := 1; i < h.parts; i++ {
			if p := mustRawGet(t, raw, partKey("big", h.slot, i)); len(p) > maxItemBytes {
				t.Fatalf("part %d holds %d bytes", i, len(p))
			}
		}
		if _, err := raw.Get(partKey("big", h.slot, h.parts)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an item beyond the last part: %v, want ErrNotFound", err)
		}
	}
}

// Replacing a split secret by a shorter one, or by a small one, and deleting it leave no
// part behind in the keychain.
func TestOSKeychainOverwriteAndDeleteCleanParts(t *testing.T) {
	s, raw := realOS(t, DefaultTimeout)
	steps := []string{secretOf(10 << 10), secretOf(30 << 10), multibyte(10 << 10), "small"}
	for _, v := range steps {
		if err := s.Set("k", v); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Get("k"); err != nil || got != "small" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	assertNoParts(t, raw, "k")
	if got := mustRawGet(t, raw, "k"); got != "small" {
		t.Fatalf("a small secret is stored as %q, want it as is", got)
	}

	if err := s.Set("k", secretOf(30<<10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("k"); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Get("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("header after Delete: %v", err)
	}
	assertNoParts(t, raw, "k")
}

func mustRawGet(t *testing.T, raw *osItems, key string) string {
	t.Helper()
	v, err := raw.Get(key)
	if err != nil {
		t.Fatalf("item %q: %v", key, err)
	}
	return v
}

// assertNoParts checks every part name the test's secrets (at most 30 KB) could have used.
func assertNoParts(t *testing.T, raw *osItems, key string) {
	t.Helper()
	for _, slot := range []byte{'a', 'b'} {
		for i := 1; i <= (30<<10)/(maxItemBytes-headerMax-3)+1; i++ {
			if _, err := raw.Get(partKey(key, slot, i)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("part %s is still in the keychain (%v)", partKey(key, slot, i), err)
			}
		}
	}
}
