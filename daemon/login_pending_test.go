package daemon

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// trayLogin is a Claude login against the simulated authorize and token
// endpoints, and an add that hands over what it is given.
func trayLogin(t *testing.T, email string) (oauth.Provider, chan api.AddCredential, func(context.Context, api.AddCredential) (string, error)) {
	_, oa := startOAuthSim(t, sim.OAuthOptions{Email: email})
	p := oauth.Anthropic(oa.URL() + "/v1/oauth/token")
	p.AuthorizeURL = oa.URL() + "/oauth/authorize"
	p.RedirectURI = "http://127.0.0.1:0/callback"
	added := make(chan api.AddCredential, 2)
	return p, added, func(_ context.Context, req api.AddCredential) (string, error) {
		added <- req
		return "anthropic-abc123", nil
	}
}

// A login whose callback never reaches the proxy is finished by the address
// the browser ended on, pasted in the panel; the callback arriving after
// it adds nothing more.
func TestBrowserLoginFinishedByAPastedAddress(t *testing.T) {
	p, added, add := trayLogin(t, "paste@example.com")
	var reg browserLogins
	logs := &logBuf{}
	if err := reg.complete(t.Context(), "anthropic", "http://x/callback?code=c"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("no login in progress: %v", err)
	}
	ls, err := runBrowserLogin(p, config.Provider{Name: "anthropic"}, "", nil, add, logs.logf, nil, &reg)
	if err != nil {
		t.Fatal(err)
	}
	// The browser is sent to the callback; this one stops there, as a
	// browser whose callback port is closed would.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(ls.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ended := resp.Header.Get("Location")
	if ended == "" {
		t.Fatalf("the authorize page sent no redirect: %s", resp.Status)
	}
	if err := reg.complete(t.Context(), "anthropic", "not an address"); err == nil || !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("a paste without a code: %v", err)
	}
	if err := reg.complete(t.Context(), "anthropic", ended); err != nil {
		t.Fatalf("pasted %v", err)
	}
	select {
	case req := <-added:
		if req.Label != "paste@example.com" || req.Secret["refresh_token"] == "" {
			t.Fatalf("added %q", req.Label)
		}
	case <-time.After(20 * time.Second): // hang guard, not a timing assertion
		t.Fatalf("never added; logs: %s", logs.String())
	}
	// The callback arriving late and a second paste add nothing more.
	if r, err := http.Get(ended); err == nil {
		r.Body.Close()
	}
	if err := reg.complete(t.Context(), "anthropic", ended); err != nil && !errors.Is(err, api.ErrNotFound) {
		t.Errorf("a second paste: %v", err)
	}
	if len(added) != 0 {
		t.Errorf("added twice")
	}
}
