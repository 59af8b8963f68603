package daemon

import (
	"context"
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
		func() (keychain.Store, error) { return keys, nil }, nil, api.Discard, t.Logf)
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
	// Not parked: a second login with the same label is a second row.
	if other := login("two"); other == id {
		t.Fatal("a healthy login was overwritten")
	} else if err := c.RemoveCredential(ctx, other); err != nil {
		t.Fatal(err)
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
