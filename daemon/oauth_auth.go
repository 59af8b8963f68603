package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/pool"
)

// oauthTokens is the Manager's TokenStore: a login lives in the keychain
// under its credential's key, in the shape api.AddCredential gave it, so
// one item holds a credential's secret whatever wrote it last.
type oauthTokens struct {
	keys func() (keychain.Store, error)
}

func (s oauthTokens) Load(id string) (oauth.Tokens, error) {
	m, err := s.raw(id)
	if err != nil {
		return oauth.Tokens{}, err
	}
	t, err := oauth.FromSecret(m)
	if err != nil {
		return oauth.Tokens{}, fmt.Errorf("%w: the login of %s in the keychain is unusable (%v); log in again", auth.ErrRelogin, id, err)
	}
	return t, nil
}

// Save replaces the login's fields and keeps any other key the secret
// carries.
func (s oauthTokens) Save(id string, t oauth.Tokens) error {
	keys, err := s.keys()
	if err != nil {
		return err
	}
	m, err := s.raw(id)
	if err != nil {
		m = map[string]string{}
	}
	for _, k := range []string{"access_token", "refresh_token", "expires_at", "id_token", "account_id"} {
		delete(m, k)
	}
	for k, v := range t.Secret() {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	if err := keys.Set(SecretKey(id), string(b)); err != nil {
		return fmt.Errorf("cannot store the login of %s in the %s keychain: %w", id, keys.Name(), err)
	}
	return nil
}

func (s oauthTokens) raw(id string) (map[string]string, error) {
	return readSecret(s.keys, id,
		"the login of %s is missing from the keychain; remove it and log in again",
		"the login of %s in the keychain is damaged; remove it and log in again")
}

// readSecret reads credential id's secret from the keychain, the fields
// api.AddCredential gave it. A secret that is missing or damaged is
// auth.ErrRelogin, said by the format missing or damaged (given the id).
func readSecret(keys func() (keychain.Store, error), id, missing, damaged string) (map[string]string, error) {
	ks, err := keys()
	if err != nil {
		return nil, err
	}
	v, err := ks.Get(SecretKey(id))
	if errors.Is(err, keychain.ErrNotFound) {
		return nil, fmt.Errorf("%w: "+missing, auth.ErrRelogin, id)
	}
	if err != nil {
		return nil, fmt.Errorf("keychain: %w", err)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return nil, fmt.Errorf("%w: "+damaged, auth.ErrRelogin, id)
	}
	return m, nil
}

// newOAuthManager builds the server's refresher. onExpiry is the pool's
// SetExpiry, so status shows when each access token runs out; hc and
// withCred send each refresh through the credential's egress.
func newOAuthManager(clk clock.Clock, keys func() (keychain.Store, error), em api.Emitter, logf func(string, ...any), onExpiry func(string, time.Time),
	hc *http.Client, withCred func(context.Context, string) context.Context) *oauth.Manager {
	return oauth.NewManager(oauth.ManagerOptions{
		Clock: clk, Store: oauthTokens{keys: keys}, Emit: em, Logf: logf, OnExpiry: onExpiry,
		Client: hc, WithCredential: withCred,
	})
}

// OAuthProvider is the OAuth client of a configured provider: the two
// built-in subscriptions, with token_url, authorize_url, redirect_uri and
// chatgpt_base_url from config. Custom providers have none.
func OAuthProvider(cp config.Provider) (oauth.Provider, bool) {
	p, ok := builtinOAuth(cp)
	if !ok {
		return p, false
	}
	if cp.AuthorizeURL != "" {
		p.AuthorizeURL = cp.AuthorizeURL
	}
	if cp.RedirectURI != "" {
		// The configured address is the only one: Codex's registered
		// fallback port belongs with Codex's own address.
		p.RedirectURI = cp.RedirectURI
		p.FallbackRedirectURIs = nil
	}
	return p, true
}

func builtinOAuth(cp config.Provider) (oauth.Provider, bool) {
	if !cp.Builtin {
		return oauth.Provider{}, false
	}
	switch cp.Name {
	case config.Anthropic:
		return oauth.Anthropic(cp.TokenURL), true
	case config.OpenAI:
		return oauth.OpenAI(cp.TokenURL, cp.ChatGPTBaseURL), true
	case config.Google:
		p := oauth.Google(cp.TokenURL, cp.CodeAssistURL)
		if u, err := url.Parse(cp.TokenURL); err == nil && cp.TokenURL != "" && cp.TokenURL != oauth.GoogleTokenURL {
			// Beside a token endpoint pointed elsewhere (a test server, a
			// gateway), so a login made there never asks the real Google
			// whose account it was.
			p.UserInfoURL = u.Scheme + "://" + u.Host + "/oauth2/v2/userinfo"
		}
		return p, true
	}
	return oauth.Provider{}, false
}

// oauthAuth is the oauth branch of the server's authenticator: the
// credential's access token, renewed when due or when refresh is set (an
// upstream said auth_expired), with the headers its upstream needs.
func oauthAuth(ctx context.Context, m *oauth.Manager, ps *projects, cred pool.Credential, cp config.Provider, refresh bool) (auth.Auth, error) {
	p, ok := OAuthProvider(cp)
	if !ok {
		return auth.Auth{}, fmt.Errorf("%w: provider %s has no subscription login; remove %s and add an API key", auth.ErrRelogin, cred.Provider, cred.ID)
	}
	a, err := m.Auth(ctx, cred.ID, p, refresh)
	if err == nil && proxy.Wire(cp.Wire) == proxy.WireOpenAI {
		// A ChatGPT login is answered by the Codex backend, whose refusals
		// (usage_limit_reached on a 403, say) are not api.openai.com's.
		a.Profile = classify.Lookup("chatgpt")
	}
	if err == nil && a.CodeAssist && a.Project == "" {
		a.Project, err = ps.project(ctx, cred.ID, cp, a)
	}
	return a, err
}

// loginTimeout bounds a login started from the tray: nobody is at a
// terminal to cancel it.
const loginTimeout = 10 * time.Minute

// startBrowserLogin begins a login for the tray (POST /subpool/v1/login):
// it returns the URL to open at once and finishes in the background,
// adding the credential with add (core.AddCredential, which emits
// credential_added). The callback port must be free; a callback that
// cannot reach the proxy is finished by a pasted address (CompleteLogin).
func startBrowserLogin(cfg config.Config, provider, label string, add func(context.Context, api.AddCredential) (string, error), logf func(string, ...any), hc *http.Client, reg *browserLogins) (api.LoginStart, error) {
	p, ok := OAuthProvider(cfg.Providers[provider])
	if !ok {
		return api.LoginStart{}, fmt.Errorf("%w: %q has no subscription login (anthropic, openai and google do); add an API key instead", api.ErrUnsupported, provider)
	}
	return runBrowserLogin(p, cfg.Providers[provider], label, clock.Real{}, add, logf, hc, reg)
}

// runBrowserLogin starts p's login and finishes it in the background, from
// the callback or from an address pasted into reg (login_pending.go).
func runBrowserLogin(p oauth.Provider, cp config.Provider, label string, clk clock.Clock, add func(context.Context, api.AddCredential) (string, error), logf func(string, ...any), hc *http.Client, reg *browserLogins) (api.LoginStart, error) {
	provider := p.Name
	ctx, cancel := context.WithTimeout(context.Background(), loginTimeout)
	l, err := oauth.StartLogin(ctx, p, oauth.LoginOptions{Clock: clk, Client: hc})
	if err != nil {
		cancel()
		return api.LoginStart{}, err
	}
	if !l.Listening() {
		l.Close()
		cancel()
		return api.LoginStart{}, fmt.Errorf("the login callback address %s is in use; close what uses it, or run `subpool login %s` in a terminal", p.RedirectURI, provider)
	}
	bl := &browserLogin{l: l, cancel: cancel, finish: func(ctx context.Context, tok oauth.Tokens) {
		if provider == config.Google {
			if err := CompleteGoogleLogin(ctx, hc, cp, &tok, time.Now()); err != nil {
				logf("login to %s: %v", provider, err)
				return
			}
		}
		if label == "" {
			label = tok.Label(provider)
		}
		if _, err := add(ctx, api.AddCredential{Provider: provider, Label: label, Kind: api.KindOAuth, Secret: tok.Secret()}); err != nil {
			logf("login to %s succeeded but the credential could not be added: %v", provider, err)
		}
	}}
	reg.put(provider, bl)
	go func() {
		defer cancel()
		defer l.Close()
		defer reg.drop(provider, bl)
		tok, err := l.Wait(ctx)
		if err != nil {
			if ctx.Err() != context.Canceled {
				logf("login to %s did not finish: %v", provider, err)
			}
			return
		}
		bl.once.Do(func() { bl.finish(ctx, tok) })
	}()
	return api.LoginStart{Provider: provider, URL: l.URL()}, nil
}
