package daemon

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/pool"
)

// secrets implements auth.Authenticator from the keychain. Secrets are
// read once and kept in memory: a keychain round trip per request would
// cost milliseconds and prompt on some desktops.
type secrets struct {
	keys      func() (keychain.Store, error)
	providers map[string]config.Provider
	oauth     *oauth.Manager // subscriptions; nil where none can be used (tests)
	projects  projects       // Google logins' Code Assist projects
	proxies   *credProxies   // credentials' own egress proxies; nil: none
	// parkRegion parks a login whose token endpoint refused its egress's
	// location (the pool's Park with api.ParkRegion); nil in tests.
	parkRegion func(id, reason string)

	mu    sync.Mutex
	cache map[string]map[string]string
	// keyHeaders are API keys' auth headers, built once: every request of
	// the key shares one, which the proxy only reads.
	keyHeaders map[string]keyHeader
}

type keyHeader struct {
	wire string
	h    http.Header
}

func newSecrets(keys func() (keychain.Store, error), providers map[string]config.Provider) *secrets {
	return &secrets{keys: keys, providers: providers, cache: map[string]map[string]string{}}
}

func (s *secrets) load(id string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.cache[id]; ok {
		return v, nil
	}
	v, err := readSecret(s.keys, id,
		"the secret of %s is missing from the keychain; remove it and add it again",
		"the secret of %s is damaged; remove it and add it again")
	if err != nil {
		return nil, err
	}
	s.cache[id] = v
	return v, nil
}

func (s *secrets) forget(id string) {
	s.mu.Lock()
	delete(s.cache, id)
	delete(s.keyHeaders, id)
	s.projects.forget(id)
	s.mu.Unlock()
}

// Auth implements auth.Authenticator.
func (s *secrets) Auth(ctx context.Context, cred pool.Credential, refresh bool) (auth.Auth, error) {
	a, err := s.auth(s.proxies.withCredential(ctx, cred.ID), cred, refresh)
	a.Proxy = s.proxies.get(cred.ID)
	if s.parkRegion != nil && regionRefused(err) {
		// The requests would meet the same refusal: one answer parks
		// every credential behind this egress, as a request's would.
		s.parkRegion(cred.ID, err.Error())
	}
	return a, err
}

func (s *secrets) auth(ctx context.Context, cred pool.Credential, refresh bool) (auth.Auth, error) {
	if cred.Kind == api.KindOAuth && s.oauth != nil {
		return oauthAuth(ctx, s.oauth, &s.projects, cred, s.providers[cred.Provider], refresh)
	}
	if refresh {
		return auth.Auth{}, auth.ErrNoRefresh
	}
	wire := s.providers[cred.Provider].Wire
	s.mu.Lock()
	kh, ok := s.keyHeaders[cred.ID]
	s.mu.Unlock()
	if ok && kh.wire == wire {
		return auth.Auth{Header: kh.h}, nil
	}
	v, err := s.load(cred.ID)
	if err != nil {
		return auth.Auth{}, err
	}
	h := http.Header{}
	switch cred.Kind {
	case "api_key":
		switch wire {
		case "anthropic":
			h.Set("x-api-key", v["key"])
		case "gemini":
			// The Gemini API's header (Gemini CLI's default): a key in
			// the query would end up in logs along the way.
			h.Set("x-goog-api-key", v["key"])
		default:
			h.Set("Authorization", "Bearer "+v["key"])
		}
		s.mu.Lock()
		if s.keyHeaders == nil {
			s.keyHeaders = map[string]keyHeader{}
		}
		s.keyHeaders[cred.ID] = keyHeader{wire, h}
		s.mu.Unlock()
		return auth.Auth{Header: h}, nil
	}
	return auth.Auth{}, fmt.Errorf("%w: %s credentials are not supported by this build", auth.ErrRelogin, cred.Kind)
}
