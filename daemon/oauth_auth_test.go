package daemon

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
)

// The tray's login: the proxy starts it, the URL comes back at once, and
// the credential is added when the browser returns.
func TestBrowserLoginForTheTray(t *testing.T) {
	p, added, add := trayLogin(t, "tray@example.com")
	logs := &logBuf{}
	ls, err := runBrowserLogin(p, config.Provider{Name: "anthropic"}, "", nil, add, logs.logf, nil, nil)
	if err != nil || ls.Provider != "anthropic" || !strings.HasPrefix(ls.URL, p.AuthorizeURL+"?") {
		t.Fatalf("%+v %v", ls, err)
	}
	resp, err := http.Get(ls.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case req := <-added:
		if req.Kind != api.KindOAuth || req.Label != "tray@example.com" || req.Secret["refresh_token"] == "" {
			t.Fatalf("added %+v", req.Label)
		}
	case <-time.After(20 * time.Second): // hang guard, not a timing assertion
		t.Fatalf("never added; logs: %s", logs.String())
	}
	if _, err := startBrowserLogin(config.Default(), "zai", "", add, logs.logf, nil, nil); err == nil {
		t.Fatal("a login for a provider without one")
	}
}

func TestOAuthTokenStore(t *testing.T) {
	mem := keychain.NewMemory()
	s := oauthTokens{keys: func() (keychain.Store, error) { return mem, nil }}
	if _, err := s.Load("nope"); !isReloginErr(err) {
		t.Fatalf("missing: %v", err)
	}
	mem.Set(SecretKey("bad"), "{not json")
	if _, err := s.Load("bad"); !isReloginErr(err) {
		t.Fatalf("damaged: %v", err)
	}
	mem.Set(SecretKey("c1"), `{"access_token":"a0","refresh_token":"r0","note":"kept"}`)
	exp := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	if err := s.Save("c1", oauth.Tokens{Access: "a1", Refresh: "r1", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load("c1")
	if err != nil || got.Access != "a1" || got.Refresh != "r1" || !got.ExpiresAt.Equal(exp) {
		t.Fatalf("%+v %v", got, err)
	}
	raw, _ := mem.Get(SecretKey("c1"))
	if !strings.Contains(raw, `"note":"kept"`) {
		t.Fatalf("other keys lost: %s", raw)
	}
}

func isReloginErr(err error) bool { return errors.Is(err, auth.ErrRelogin) }

func closeTo(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// authorize_url is configurable under [providers.anthropic] and
// [providers.openai] like token_url: the default config says the address
// the real client uses, a bad one is refused naming the key, and a
// configured one is where the login goes. A configured redirect_uri is the
// only callback address: Codex's registered fallback is for its own.
func TestAuthorizeURLConfigurable(t *testing.T) {
	def := config.Default()
	for name, want := range map[string]string{config.Anthropic: oauth.AnthropicAuthorizeURL, config.OpenAI: oauth.OpenAIAuthorizeURL} {
		if got := def.Providers[name].AuthorizeURL; got != want {
			t.Fatalf("default %s authorize_url %q, want %q", name, got, want)
		}
		p, _ := OAuthProvider(def.Providers[name])
		if p.AuthorizeURL != want {
			t.Fatalf("%s login goes to %q by default", name, p.AuthorizeURL)
		}
	}
	for _, line := range []string{`authorize_url = "https://claude.com/cai/oauth/authorize"`, `authorize_url    = "https://auth.openai.com/oauth/authorize"`} {
		if !strings.Contains(config.DefaultText, line) {
			t.Fatalf("the default config.toml lacks %s", line)
		}
	}
	if _, err := config.Parse("config.toml", []byte(config.DefaultText)); err != nil {
		t.Fatalf("default text: %v", err)
	}
	_, err := config.Parse("config.toml", []byte("[providers.openai]\nauthorize_url = \"not a url\"\n"))
	if err == nil || !strings.Contains(err.Error(), "providers.openai.authorize_url") {
		t.Fatalf("a bad authorize_url: %v", err)
	}
	cfg, err := config.Parse("config.toml", []byte("[providers.anthropic]\nauthorize_url = \"https://login.example.test/oauth/authorize\"\n[providers.openai]\nauthorize_url = \"https://auth.example.test/oauth/authorize\"\nredirect_uri = \"http://localhost:2468/auth/callback\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := OAuthProvider(cfg.Providers[config.Anthropic])
	o, _ := OAuthProvider(cfg.Providers[config.OpenAI])
	if a.AuthorizeURL != "https://login.example.test/oauth/authorize" || o.AuthorizeURL != "https://auth.example.test/oauth/authorize" {
		t.Fatalf("configured authorize_url not used: %q %q", a.AuthorizeURL, o.AuthorizeURL)
	}
	if o.RedirectURI != "http://localhost:2468/auth/callback" || len(o.FallbackRedirectURIs) != 0 {
		t.Fatalf("configured redirect_uri: %q, fallbacks %v", o.RedirectURI, o.FallbackRedirectURIs)
	}
}
