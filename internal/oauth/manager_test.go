package oauth

import (
	"errors"
	"github.com/subpool/subpool/internal/freeport"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// Many callers at once when the token is due: one refresh, everyone gets
// its result, and the rotated refresh token is in the store by the time
// anyone has the new access token.
func TestOneRefreshForConcurrentCallers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		advance time.Duration
		force   bool
	}{
		{"ahead of expiry", 57 * time.Minute, false}, // inside the 5 min skew
		{"after expiry", 61 * time.Minute, false},
		{"forced by the upstream", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, sim.OAuthOptions{})
			old := e.login("c1", sim.Anthropic)
			e.clk.Advance(tc.advance)
			ctx := guard(t)
			var wg sync.WaitGroup
			got := make([]Tokens, 100)
			errs := make([]error, 100)
			for i := range got {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i], errs[i] = e.m.Token(ctx, "c1", e.anth, tc.force)
				}()
			}
			wg.Wait()
			for i := range got {
				if errs[i] != nil {
					t.Fatalf("caller %d: %v", i, errs[i])
				}
				if got[i].Access != got[0].Access || got[i].Access == old.Access {
					t.Fatalf("caller %d got another token", i)
				}
			}
			if st := e.oa.Stats(); st.Refreshes != 1 || st.Rotations != 1 {
				t.Fatalf("refresh calls: %+v", st)
			}
			stored := e.store.get("c1")
			if stored.Refresh == old.Refresh || stored.Access != got[0].Access {
				t.Fatal("the rotated refresh token is not in the store")
			}
			if !stored.ExpiresAt.Equal(e.clk.Now().Add(time.Hour)) {
				t.Fatalf("expiry %v", stored.ExpiresAt)
			}
			evs := e.rec.of(api.EventTokenRefreshed)
			if len(evs) != 1 || evs[0].CredentialID != "c1" || evs[0].Provider != "anthropic" || evs[0].Until == nil {
				t.Fatalf("events: %+v", evs)
			}
			noSecret(t, "events", e.rec.json(), old.Access, old.Refresh, stored.Access, stored.Refresh)
		})
	}
}

// Every request the upstream refused with the old token asks for a
// refresh; within 30 s of one, they get its token instead of spending
// the refresh token again. Later, a forced refresh refreshes.
func TestForcedRefreshesCollapse(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	e.login("c1", sim.OpenAI)
	ctx := guard(t)
	first, err := e.m.Token(ctx, "c1", e.oai, true)
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(29 * time.Second)
	again, err := e.m.Token(ctx, "c1", e.oai, true)
	if err != nil || again.Access != first.Access {
		t.Fatalf("a second forced refresh within 30 s refreshed again: %v", err)
	}
	e.clk.Advance(time.Second)
	third, err := e.m.Token(ctx, "c1", e.oai, true)
	if err != nil || third.Access == first.Access {
		t.Fatalf("forced refresh after 30 s: %v", err)
	}
	if st := e.oa.Stats(); st.Rotations != 2 || st.Reused != 0 {
		t.Fatalf("%+v", st)
	}
	if third.AccountID == "" || third.Email != "user@example.com" || third.Plan != "plus" {
		t.Fatalf("account claims lost over the refresh: %q %q %q", third.AccountID, third.Email, third.Plan)
	}
}

// A refreshed login that cannot be saved is not handed out: the caller
// gets a temporary error, and the next call saves it and hands it out
// without spending the refresh token again.
func TestRotatedTokenIsSavedBeforeUse(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	old := e.login("c1", sim.Anthropic)
	e.clk.Advance(2 * time.Hour)
	e.store.setFail(errors.New("keychain locked"))
	ctx := guard(t)
	_, err := e.m.Token(ctx, "c1", e.anth, false)
	if err == nil || isRelogin(err) || !strings.Contains(err.Error(), "cannot save") {
		t.Fatalf("unsaved token: %v", err)
	}
	if e.store.get("c1").Refresh != old.Refresh {
		t.Fatal("store changed although Save failed")
	}
	e.store.setFail(nil)
	got, err := e.m.Token(ctx, "c1", e.anth, false)
	if err != nil {
		t.Fatal(err)
	}
	if st := e.oa.Stats(); st.Refreshes != 1 {
		t.Fatalf("the refresh token was spent again: %+v", st)
	}
	if s := e.store.get("c1"); s.Refresh == old.Refresh || s.Access != got.Access {
		t.Fatal("the saved login is not the one handed out")
	}
}

// The token endpoint limiting or failing is never a reason to log in
// again: the caller gets a temporary error, refreshes wait out the
// backoff (the endpoint's retry-after when longer), then succeed.
func TestRefreshEndpointFailuresAreTemporary(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	old := e.login("c1", sim.Anthropic)
	e.clk.Advance(61 * time.Minute)
	e.oa.ScriptRefresh(sim.Step{Status: 429, Header: map[string]string{"Retry-After": "90"}})
	ctx := guard(t)
	_, err := e.m.Token(ctx, "c1", e.anth, false)
	if err == nil || isRelogin(err) || !strings.Contains(err.Error(), "429") {
		t.Fatalf("429: %v", err)
	}
	e.clk.Advance(89 * time.Second)
	if _, err := e.m.Token(ctx, "c1", e.anth, false); err == nil || isRelogin(err) || !strings.Contains(err.Error(), "next try in 1s") {
		t.Fatalf("during backoff: %v", err)
	}
	if st := e.oa.Stats(); st.Refreshes != 1 {
		t.Fatalf("the endpoint was asked again during backoff: %+v", st)
	}
	e.clk.Advance(time.Second)
	got, err := e.m.Token(ctx, "c1", e.anth, false)
	if err != nil || got.Access == old.Access {
		t.Fatalf("after backoff: %v", err)
	}
	noSecret(t, "logs", e.logs.String(), old.Access, old.Refresh, got.Access, got.Refresh)

	// A token that is due but not yet expired is still handed out while
	// the endpoint is down; the failure only shows once it expires.
	e.clk.Advance(57 * time.Minute)
	e.oa.ScriptRefresh(sim.Step{Status: 503, Times: 10})
	cur, err := e.m.Token(ctx, "c1", e.anth, false)
	if err != nil || cur.Access != got.Access {
		t.Fatalf("a still valid token was withheld: %v", err)
	}
	e.clk.Advance(4 * time.Minute)
	if _, err := e.m.Token(ctx, "c1", e.anth, false); err == nil || isRelogin(err) {
		t.Fatalf("expired token during an outage: %v", err)
	}
}

// A dead refresh token means log in again, said once: the endpoint is not
// asked again for that login.
func TestDeadLoginNeedsRelogin(t *testing.T) {
	for _, tc := range []struct{ provider, code string }{{sim.Anthropic, "invalid_grant"}, {sim.OpenAI, "refresh_token_invalidated"}} {
		t.Run(tc.provider, func(t *testing.T) {
			e := newEnv(t, sim.OAuthOptions{})
			g := e.login("c1", tc.provider)
			e.oa.Revoke(g.Refresh)
			e.clk.Advance(2 * time.Hour)
			p := e.anth
			if tc.provider == sim.OpenAI {
				p = e.oai
			}
			ctx := guard(t)
			_, err := e.m.Token(ctx, "c1", p, false)
			if !isRelogin(err) || !strings.Contains(err.Error(), tc.code) || !strings.Contains(err.Error(), "subpool login "+p.Name) {
				t.Fatalf("dead login: %v", err)
			}
			noSecret(t, "error", err.Error(), g.Access, g.Refresh)
			if _, err := e.m.Token(ctx, "c1", p, true); !isRelogin(err) {
				t.Fatalf("second call: %v", err)
			}
			if st := e.oa.Stats(); st.Refreshes != 1 {
				t.Fatalf("%+v", st)
			}
		})
	}
}

// Anthropic's token endpoint has moved before: with the default, the old
// addresses are tried when the new one cannot be reached or says 404; a
// configured endpoint is the only one used.
func TestTokenEndpointFallback(t *testing.T) {
	if p := Anthropic(""); p.TokenURL != AnthropicTokenURL || len(p.TokenURLs) != 2 {
		t.Fatalf("default: %+v", p)
	}
	if p := Anthropic("http://127.0.0.1:1/v1/oauth/token"); len(p.TokenURLs) != 0 {
		t.Fatalf("configured: %+v", p.TokenURLs)
	}
	refused := "http://" + freeport.Addr(t) + "/v1/oauth/token"

	e := newEnv(t, sim.OAuthOptions{})
	old := e.login("c1", sim.Anthropic)
	p := e.anth
	p.TokenURL = refused
	p.TokenURLs = []string{e.oa.URL() + "/moved/v1/oauth/token", e.oa.URL() + "/v1/oauth/token"}
	got, err := e.m.Token(guard(t), "c1", p, true)
	if err != nil || got.Access == old.Access {
		t.Fatalf("fallback: %v", err)
	}
	if st := e.oa.Stats(); st.Rotations != 1 {
		t.Fatalf("%+v", st)
	}
}

// A credential the Manager was told to forget saves nothing more, and a
// new login under its id is loaded afresh.
func TestForgetReloads(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	e.login("c1", sim.Anthropic)
	ctx := guard(t)
	a, err := e.m.Token(ctx, "c1", e.anth, false)
	if err != nil {
		t.Fatal(err)
	}
	b := e.login("c1", sim.Anthropic)
	if got, _ := e.m.Token(ctx, "c1", e.anth, false); got.Access != a.Access {
		t.Fatal("the cached login was not used")
	}
	e.m.Forget("c1")
	if got, _ := e.m.Token(ctx, "c1", e.anth, false); got.Access != b.Access {
		t.Fatal("Forget did not drop the cached login")
	}
}

func TestSecretRoundTrip(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{Email: "bo@example.com", Plan: "pro"})
	g := e.oa.Grant(sim.OpenAI)
	in := Tokens{Access: g.Access, Refresh: g.Refresh, IDToken: g.IDToken, ExpiresAt: g.ExpiresAt,
		Source: Source{Kind: SourceCodex, Path: "/x/auth.json"}}
	in.fillFromJWTs()
	if in.AccountID != g.AccountID || in.Email != "bo@example.com" || in.Plan != "pro" {
		t.Fatalf("claims: %+v", in)
	}
	sec := in.Secret()
	if sec["expires_at"] != g.ExpiresAt.UTC().Format(time.RFC3339) || sec["source_path"] != "/x/auth.json" || sec["account_id"] != g.AccountID {
		t.Fatalf("secret keys: %v", sec)
	}
	out, err := FromSecret(sec)
	if err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Fatalf("round trip:\n%+v\n%+v", out, in)
	}
	// Only the access token and id token: account and expiry come from
	// the JWTs, as in a secret a script added by hand.
	out, err = FromSecret(map[string]string{"access_token": g.Access, "id_token": g.IDToken})
	if err != nil || out.AccountID != g.AccountID || !out.ExpiresAt.Equal(g.ExpiresAt) {
		t.Fatalf("from JWTs: %+v %v", out, err)
	}
	for _, bad := range []map[string]string{{}, {"access_token": "x", "expires_at": "tomorrow"}} {
		if _, err := FromSecret(bad); err == nil {
			t.Fatalf("accepted %v", bad)
		} else {
			noSecret(t, "error", err.Error(), "tomorrow")
		}
	}
	if l := (Tokens{Email: strings.Repeat("x", 70) + "@example.com", Plan: "pro"}).Label("openai"); len([]rune(l)) != 64 {
		t.Fatalf("label %q", l)
	}
}

// A token issued for less than the skew is due as soon as it arrives. It
// is renewed at most every 30 s while it lasts, not on every call: each
// renewal spends a refresh token.
func TestShortLivedTokenServesUntilDue(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{AccessTTL: 2 * time.Minute})
	e.login("c1", sim.Anthropic)
	ctx := guard(t)
	first, err := e.m.Token(ctx, "c1", e.anth, false)
	if err != nil || e.oa.Stats().Rotations != 1 {
		t.Fatalf("first call: %v %+v", err, e.oa.Stats())
	}
	for range 5 {
		e.clk.Advance(5 * time.Second)
		if got, err := e.m.Token(ctx, "c1", e.anth, false); err != nil || got.Access != first.Access {
			t.Fatalf("renewed within 30 s of the last renewal: %v %+v", err, e.oa.Stats())
		}
	}
	e.clk.Advance(5 * time.Second) // 30 s on
	if got, err := e.m.Token(ctx, "c1", e.anth, false); err != nil || got.Access == first.Access || e.oa.Stats().Rotations != 2 {
		t.Fatalf("not renewed 30 s on: %v %+v", err, e.oa.Stats())
	}
}
