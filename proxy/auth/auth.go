// Package auth is what the engine and the credential owners agree on: the
// headers one attempt sends for its credential, and the errors that say a
// credential cannot be used. It sits below both proxy and internal/oauth so
// that neither imports the other.
package auth

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/pool"
)

// Auth is what one attempt sends for its credential.
type Auth struct {
	// Header is set on the outgoing request (after the client's own auth
	// headers are removed). Values replace; anthropic-beta is merged.
	Header http.Header
	// BaseURL replaces the provider's base_url when set: ChatGPT logins go
	// to the Codex backend, not api.openai.com.
	BaseURL string
	// StripV1 drops the leading /v1 of the client's path: the Codex backend
	// answers /responses under its base URL.
	StripV1 bool
	// CodeAssist: a Google login, answered by the Code Assist API
	// (BaseURL) rather than the Gemini API, in its envelope; Project is
	// the login's Cloud project, which every call of it must name.
	CodeAssist bool
	Project    string
	// Profile replaces the provider's classification rules for this
	// credential: a ChatGPT login speaks the Codex backend's errors, not
	// api.openai.com's. Nil keeps the provider's.
	Profile *classify.Profile
	// Proxy is the credential's own egress proxy (add-key/login
	// --proxy); nil leaves [network] proxy or the environment's. The
	// engine sends with WithProxy, so the one transport dials it.
	Proxy *url.URL
}

// Authenticator supplies credentials' auth. It owns the secrets: the proxy
// only ever sees headers for one attempt.
type Authenticator interface {
	// Auth returns what to send with cred. With refresh, the access token
	// is renewed first (after an auth_expired verdict); implementations
	// allow one refresh per credential at a time and make concurrent
	// callers wait for it.
	Auth(ctx context.Context, cred pool.Credential, refresh bool) (Auth, error)
}

// ErrRelogin wraps an Authenticator error that only the user can fix: a
// dead refresh token, a revoked login. The credential is parked.
var ErrRelogin = errors.New("log in again")

// ErrNoRefresh is returned for refresh on a credential that has nothing to
// refresh (an API key).
var ErrNoRefresh = errors.New("credential cannot be refreshed")

// proxyKey carries a call's own egress proxy on its context.
type proxyKey struct{}

// WithProxy makes u the proxy of requests made with ctx: a credential's
// own. A nil u leaves ctx as it is (the global proxy applies). The key
// lives here, below the engine, so the engine sends with it and
// internal/egress's transport reads it without either importing the other.
func WithProxy(ctx context.Context, u *url.URL) context.Context {
	if u == nil {
		return ctx
	}
	return context.WithValue(ctx, proxyKey{}, u)
}

// ProxyOf is the proxy WithProxy put on ctx, or nil.
func ProxyOf(ctx context.Context) *url.URL {
	u, _ := ctx.Value(proxyKey{}).(*url.URL)
	return u
}
