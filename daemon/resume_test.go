package daemon

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
)

// Resume on a credential parked for a login says so over the admin API,
// 409 with what to run, and still undoes the pause, so the login puts it
// back to work (issue 43: it answered 204 and left it parked). A key the
// provider refused is told to be replaced; a healthy one resumes with 204.
func TestResumeOfALoginThatNeedsALoginSaysSo(t *testing.T) {
	_, oa := startOAuthSim(t, sim.OAuthOptions{})
	s := startHome(t, oauthHome(t, oa), &logBuf{})
	ctx := context.Background()
	add := func(kind string, secret map[string]string) string {
		id, err := s.AddCredential(ctx, api.AddCredential{Provider: "anthropic", Label: kind + "-" + secret["key"], Kind: kind, Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	login := add(api.KindOAuth, map[string]string{"access_token": "a", "refresh_token": "r"})
	key := add(api.KindAPIKey, map[string]string{"key": "sk-ant-k"})
	healthy := add(api.KindAPIKey, map[string]string{"key": "sk-ant-h"})
	for _, id := range []string{login, key, healthy} {
		if err := s.Pause(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	s.core.pool.Park(login, "", api.ParkRelogin, "401 invalid_grant")
	s.core.pool.Park(key, "", api.ParkRelogin, "401 invalid x-api-key")

	c := &client.Client{Addr: s.addr, Token: s.adminToken}
	for _, tc := range []struct{ id, want string }{
		{login, login + " needs a login: run subpool login anthropic"},
		{key, "add a new key (subpool add-key anthropic --label NAME) and remove this one (subpool remove " + key + ")"},
	} {
		err := c.Resume(ctx, tc.id)
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != http.StatusConflict || !errors.Is(err, api.ErrConflict) || !strings.Contains(ce.Message, tc.want) {
			t.Errorf("resume %s: %v, want 409 saying %q", tc.id, err, tc.want)
		}
	}
	if err := c.Resume(ctx, healthy); err != nil {
		t.Errorf("resume of a healthy key: %v", err)
	}
	st, _ := s.Status(ctx)
	for _, cs := range st.Providers[0].Credentials {
		if cs.State == api.StatePaused {
			t.Errorf("%s still paused after resume", cs.ID)
		}
	}
}
