package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// "Log in again" on a login parked for re-login replaces its tokens in
// place and puts it back to work, instead of adding a second row.
func TestReloginReplacesParkedLogin(t *testing.T) {
	keys := keychain.NewMemory()
	c := newCore(config.Default(), clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		func() (keychain.Store, error) { return keys, nil }, noFiles{}, api.Discard, t.Logf)
	ctx := context.Background()
	login := func(access string) string {
		id, err := c.AddCredential(ctx, api.AddCredential{Provider: "anthropic", Label: "ada@example.com", Kind: api.KindOAuth,
			Secret: map[string]string{"access_token": access, "refresh_token": "r-" + access}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	id := login("one")
	// Not parked: a second login with the same label is refused, naming
	// the first, which keeps its tokens (issue 42: two rows with one label
	// could not be told apart).
	_, err := c.AddCredential(ctx, api.AddCredential{Provider: "anthropic", Label: "ada@example.com", Kind: api.KindOAuth,
		Secret: map[string]string{"access_token": "two", "refresh_token": "r-two"}})
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), id) {
		t.Fatalf("a second login with the label: %v", err)
	}
	if raw, _ := keys.Get(SecretKey(id)); !strings.Contains(raw, `"access_token":"one"`) {
		t.Fatal("a healthy login was overwritten")
	}
	c.pool.Park(id, "", api.ParkRelogin, "401 invalid_grant")
	if again := login("three"); again != id {
		t.Fatalf("re-login made a new credential %s instead of fixing %s", again, id)
	}
	st := c.Status(ctx).Providers[0].Credentials
	if len(st) != 1 || st[0].State != api.StateReady || len(st[0].Parks) != 0 {
		t.Fatalf("after re-login: %+v", st)
	}
	raw, _ := keys.Get(SecretKey(id))
	if !strings.Contains(raw, `"access_token":"three"`) {
		t.Fatalf("secret not replaced: has %d bytes", len(raw))
	}
}

// The same API key twice, under any provider or label, and a label its
// provider already has, are refused with api.ErrConflict naming the
// credential that has it; the key itself is never in the error. The same
// label under another provider is no clash.
func TestAddRefusesDuplicates(t *testing.T) {
	keys := keychain.NewMemory()
	c := newCore(config.Default(), clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		func() (keychain.Store, error) { return keys, nil }, noFiles{}, api.Discard, t.Logf)
	ctx := context.Background()
	add := func(provider, label, key string) (string, error) {
		return c.AddCredential(ctx, api.AddCredential{Provider: provider, Label: label, Kind: api.KindAPIKey, Secret: map[string]string{"key": key}})
	}
	const key = "sk-ant-api03-duplicate-0123456789"
	first, err := add("anthropic", "work", key)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ provider, label, key string }{
		{"anthropic", "home", key},        // the same key, another label
		{"openai", "work-openai", key},    // the same key, another provider
		{"anthropic", "Work", "sk-ant-b"}, // the label, another case
		{"anthropic", "work", "sk-ant-c"}, // the label
	} {
		_, err := add(tc.provider, tc.label, tc.key)
		if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), first) || strings.Contains(err.Error(), key) {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	if _, err := add("openai", "work", "sk-proj-other"); err != nil {
		t.Fatalf("the label under another provider: %v", err)
	}
	if n := len(c.Status(ctx).Providers[0].Credentials); n != 1 {
		t.Fatalf("anthropic has %d credentials after the refusals, want 1", n)
	}
}
