package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/events"
	"github.com/subpool/subpool/proxy/pool"
)

// emitted reports whether the hub has had an event of type t.
func emitted(h *events.Hub, t api.EventType) bool {
	evs, _ := h.Since(0)
	return slices.ContainsFunc(evs, func(e api.Event) bool { return e.Type == t })
}

// refreshRig is a refresher over one login against the simulated token
// endpoint, on a fake clock.
type refreshRig struct {
	t    *testing.T
	clk  *clock.Fake
	oa   *sim.OAuthServer
	keys keychain.Store
	hub  *events.Hub
	pool *pool.Pool
	r    *refresher
}

// newRefreshRig's login c1 has no secret yet: the test stores one the
// rig's token endpoint issued.
func newRefreshRig(t *testing.T, source string) *refreshRig {
	_, oa := startOAuthSim(t, sim.OAuthOptions{})
	g := &refreshRig{t: t, clk: clock.NewFake(time.Now()), oa: oa, keys: keychain.NewMemory()}
	g.hub = events.NewHub(g.clk, 64)
	g.pool = pool.New(g.clk, pool.Config{}, g.hub)
	g.pool.Add(pool.Credential{ID: "c1", Provider: "anthropic", Label: "max", Kind: api.KindOAuth, Source: source})
	m := newOAuthManager(g.clk, func() (keychain.Store, error) { return g.keys, nil }, g.hub, t.Logf, g.pool.SetExpiry, nil, nil)
	cfg := config.Default()
	cp := cfg.Providers["anthropic"]
	cp.TokenURL = oa.URL() + "/v1/oauth/token"
	cfg.Providers["anthropic"] = cp
	g.r = &refresher{clk: g.clk, every: time.Minute, m: m, pool: g.pool, providers: cfg.Providers}
	return g
}

// after moves the clock on by d and has the refresher look.
func (g *refreshRig) after(d time.Duration) {
	g.clk.Advance(d)
	g.r.sweep(context.Background())
}

func (g *refreshRig) status() api.CredentialStatus {
	return g.pool.Status("anthropic")[0]
}

func grantSecret(tok sim.OAuthTokens) map[string]string {
	return oauth.Tokens{Access: tok.Access, Refresh: tok.Refresh, ExpiresAt: tok.ExpiresAt}.Secret()
}

// An idle login is renewed in its last minutes, with no request waiting;
// one whose refresh token dies is parked when it dies, and the tray is
// told to ask for a new login.
func TestRefresherKeepsAnIdleLogin(t *testing.T) {
	g := newRefreshRig(t, "")
	g.keys.Set(SecretKey("c1"), mustJSON(grantSecret(g.oa.Grant(sim.Anthropic)))) // an hour's token
	g.after(0)
	if st := g.oa.Stats(); st.Refreshes != 0 {
		t.Fatalf("refreshed a fresh token: %+v", st)
	}
	g.after(50 * time.Minute)
	if st := g.oa.Stats(); st.Refreshes != 0 {
		t.Fatalf("refreshed 10 minutes early: %+v", st)
	}
	g.after(6 * time.Minute) // within five minutes of the end
	if st := g.oa.Stats(); st.Rotations != 1 || !emitted(g.hub, api.EventTokenRefreshed) {
		t.Fatalf("not renewed: %+v", st)
	}
	saved, err := oauthTokens{keys: func() (keychain.Store, error) { return g.keys, nil }}.Load("c1")
	if err != nil || saved.ExpiresAt.Before(g.clk.Now()) {
		t.Fatalf("the renewed login was not saved: %+v %v", saved, err)
	}
	if s := g.status(); s.ExpiresAt == nil || !s.ExpiresAt.Equal(saved.ExpiresAt) {
		t.Fatalf("status expiry %v, saved %v", s.ExpiresAt, saved.ExpiresAt)
	}

	// The account signs out everywhere: the next renewal is refused.
	g.oa.Revoke(saved.Refresh)
	g.after(saved.ExpiresAt.Sub(g.clk.Now()) - time.Minute)
	s := g.status()
	if len(s.Parks) != 1 || s.Parks[0].Kind != api.ParkRelogin || !emitted(g.hub, api.EventReloginRequired) {
		t.Fatalf("not parked: %+v", s)
	}
	n := g.oa.Stats().Refreshes
	g.after(time.Minute)
	g.after(time.Minute)
	if st := g.oa.Stats(); st.Refreshes != n {
		t.Fatalf("kept asking the endpoint with a dead login: %+v", st)
	}
}

// A Claude Code login that died comes back by itself once Claude Code
// holds a good one again; the endpoint is not asked with the dead one.
func TestRefresherAdoptsTheCLIsNewLogin(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".credentials.json")
	writeCC := func(tok sim.OAuthTokens) {
		b := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":%q,"refreshToken":%q,"expiresAt":%d,"scopes":["user:inference"]}}`,
			tok.Access, tok.Refresh, tok.ExpiresAt.UnixMilli())
		if err := os.WriteFile(path, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g := newRefreshRig(t, oauth.SourceClaudeCode)
	dead := g.oa.Grant(sim.Anthropic)
	g.oa.Revoke(dead.Refresh)
	writeCC(dead)
	sec := grantSecret(dead)
	sec["source"], sec["source_path"] = oauth.SourceClaudeCode, path
	g.keys.Set(SecretKey("c1"), mustJSON(sec))

	g.after(56 * time.Minute)
	if s := g.status(); len(s.Parks) != 1 || s.Parks[0].Kind != api.ParkRelogin {
		t.Fatalf("a dead imported login not parked: %+v", s)
	}
	n := g.oa.Stats().Refreshes
	g.after(time.Minute)
	if st := g.oa.Stats(); st.Refreshes != n {
		t.Fatalf("asked the endpoint again with the dead login: %+v", st)
	}

	// The user runs `claude /login`.
	writeCC(g.oa.Grant(sim.Anthropic))
	g.after(time.Minute)
	if s := g.status(); len(s.Parks) != 0 || s.State != api.StateReady {
		t.Fatalf("the CLI's new login was not taken up: %+v", s)
	}
}

// A login parked for a new login (not imported) and a paused one are
// left alone: only the user can mend the first, and the second is not
// wanted.
func TestRefresherLeavesParkedAndPausedLogins(t *testing.T) {
	g := newRefreshRig(t, "")
	tok := g.oa.Grant(sim.Anthropic)
	g.keys.Set(SecretKey("c1"), mustJSON(grantSecret(tok)))
	g.pool.Park("c1", "", api.ParkRelogin, "revoked")
	g.after(56 * time.Minute)
	g.pool.Unpark("c1")
	g.pool.Pause("c1")
	g.after(time.Minute)
	if st := g.oa.Stats(); st.Refreshes != 0 {
		t.Fatalf("refreshed a parked or paused login: %+v", st)
	}
	g.pool.Resume("c1")
	g.after(0)
	if st := g.oa.Stats(); st.Rotations != 1 {
		t.Fatalf("not refreshed once resumed: %+v", st)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// waitFor polls cond until it holds; the limit only guards against a
// hang, it is not a timing assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The token endpoint down: the login is used while its token lasts; once
// the token has run out the tray shows why renewing fails, and the note
// goes when renewing works again.
func TestRefresherNotesAnEndpointOutage(t *testing.T) {
	g := newRefreshRig(t, "")
	g.keys.Set(SecretKey("c1"), mustJSON(grantSecret(g.oa.Grant(sim.Anthropic))))
	g.oa.ScriptRefresh(sim.Step{Status: 503, Body: `{"error":"temporarily_unavailable"}`, Times: 4})
	g.after(56 * time.Minute) // due; the manager then backs off 30 s, 1 m, 2 m, 5 m
	for range 4 {
		if s := g.status(); s.Reason != "" {
			t.Fatalf("noted while the token still works: %+v", s)
		}
		g.after(time.Minute)
	}
	g.after(time.Minute) // 61 m: the token has run out, renewing waits
	s := g.status()
	if len(s.Parks) != 0 || !strings.Contains(s.Reason, "503") {
		t.Fatalf("outage not shown: %+v", s)
	}
	for range 4 {
		g.after(time.Minute)
	}
	if st := g.oa.Stats(); st.Rotations != 1 {
		t.Fatalf("not renewed after the outage: %+v", st)
	}
	if s := g.status(); s.Reason != "" || len(s.Parks) != 0 {
		t.Fatalf("after the outage: %+v", s)
	}
}
