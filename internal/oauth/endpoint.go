package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/auth"
)

// TokenError is a token endpoint's refusal, or the failure to reach it.
// It never carries a token or the endpoint's raw answer: only the status
// and the OAuth error code.
type TokenError struct {
	Provider string
	Status   int    // 0 when no answer came
	Code     string // the OAuth error code, when the answer had one
	// Relogin: the login is dead (invalid_grant, a reused, expired or
	// revoked refresh token); only the user can fix it. errors.Is(err,
	// auth.ErrRelogin) reports it.
	Relogin bool
	// RetryAfter is the endpoint's own retry-after, when it sent one.
	RetryAfter time.Duration
	cause      error // the transport error when Status is 0
}

func (e *TokenError) Error() string {
	who := e.Provider + " token endpoint"
	switch {
	case e.Relogin:
		return fmt.Sprintf("%s refused the refresh token (%s): log in again with `subpool login %s`", who, e.what(), e.Provider)
	case e.Status == 0:
		return fmt.Sprintf("%s unreachable: %v", who, e.cause)
	case strings.EqualFold(e.Code, "unsupported_country_region_territory"):
		// The refresh left from a location the provider refuses, as the
		// requests would (jlcodes99/cockpit-tools#611).
		return fmt.Sprintf("%s answered %s: it refuses the location subpool's requests leave from; set [network] proxy in config.toml, or log in again with --proxy URL", who, e.what())
	}
	return fmt.Sprintf("%s answered %s; will retry", who, e.what())
}

func (e *TokenError) what() string {
	s := strconv.Itoa(e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	return s
}

func (e *TokenError) Unwrap() error {
	if e.Relogin {
		return auth.ErrRelogin
	}
	return e.cause
}

// reloginCodes are the token endpoint answers that mean the login is gone
// (RFC 6749 invalid_grant; OpenAI's refresh_token_* codes, protocols.md).
var reloginCodes = []string{
	"invalid_grant", "refresh_token_reused", "refresh_token_expired", "refresh_token_invalidated",
	"token_revoked", "token_invalidated", "invalid_refresh_token",
}

// tokenAnswer is the union of the providers' token answers.
type tokenAnswer struct {
	AccessToken  string          `json:"access_token"`
	RefreshToken string          `json:"refresh_token"`
	IDToken      string          `json:"id_token"`
	ExpiresIn    json.Number     `json:"expires_in"`
	Account      json.RawMessage `json:"account"`
	Organization json.RawMessage `json:"organization"`
	Scope        string          `json:"scope"`
}

// post sends one token request to p's endpoints in turn and returns the
// first answer. It moves to the next endpoint only when the request
// cannot have reached the previous one (no connection, no such host) or
// it answered 404/405: a refresh token that reached an endpoint may have
// been spent there. The body is JSON, except a code exchange at OpenAI,
// which Codex sends as a form, and everything at Google, which takes only
// forms.
func post(ctx context.Context, c *http.Client, p Provider, fields map[string]string) (*http.Response, []byte, error) {
	var body []byte
	ctype := "application/json"
	if p.Name == NameGoogle || p.Name == NameOpenAI && fields["grant_type"] == "authorization_code" {
		v := url.Values{}
		for k, f := range fields {
			v.Set(k, f)
		}
		body, ctype = []byte(v.Encode()), "application/x-www-form-urlencoded"
	} else {
		body, _ = json.Marshal(fields)
	}
	var lastErr error
	for _, u := range p.tokenURLs() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Accept", "application/json")
		// An honest name; the endpoint needs no other client's.
		req.Header.Set("User-Agent", "subpool")
		resp, err := c.Do(req)
		if err != nil {
			lastErr = err
			if notSent(err) && ctx.Err() == nil {
				continue
			}
			return nil, nil, err
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return nil, nil, err
		}
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			lastErr = &TokenError{Provider: p.Name, Status: resp.StatusCode}
			continue
		}
		return resp, b, nil
	}
	return nil, nil, lastErr
}

// notSent reports a transport error that happened before the request went
// out.
func notSent(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	return errors.As(err, &dns) || (errors.As(err, &op) && op.Op == "dial")
}

// call runs one grant and turns the answer into Tokens or a *TokenError.
func call(ctx context.Context, c *http.Client, p Provider, fields map[string]string, now time.Time) (Tokens, error) {
	resp, b, err := post(ctx, c, p, fields)
	if err != nil {
		var te *TokenError
		if errors.As(err, &te) {
			return Tokens{}, te
		}
		return Tokens{}, &TokenError{Provider: p.Name, cause: err}
	}
	if resp.StatusCode/100 != 2 {
		code := errorCode(b)
		te := &TokenError{Provider: p.Name, Status: resp.StatusCode, Code: code,
			Relogin:    slices.Contains(reloginCodes, strings.ToLower(code)),
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"), now)}
		// Codex's rule: any 401 from OpenAI's token endpoint is a dead
		// login, whatever its body says. Claude Code logs out only on
		// invalid_grant, so Anthropic keeps the code rule alone.
		if p.Name == NameOpenAI && resp.StatusCode == http.StatusUnauthorized {
			te.Relogin = true
		}
		return Tokens{}, te
	}
	var a tokenAnswer
	if err := json.Unmarshal(b, &a); err != nil || a.AccessToken == "" {
		return Tokens{}, &TokenError{Provider: p.Name, Status: resp.StatusCode, Code: "answer without access_token"}
	}
	t := Tokens{Access: a.AccessToken, Refresh: a.RefreshToken, IDToken: a.IDToken, Scopes: a.Scope}
	if secs, err := a.ExpiresIn.Int64(); err == nil && secs > 0 {
		t.ExpiresAt = now.Add(time.Duration(secs) * time.Second).UTC().Truncate(time.Second)
	}
	// Claude says who logged in beside the tokens.
	var acct struct {
		Email string `json:"email_address"`
	}
	if json.Unmarshal(a.Account, &acct) == nil {
		t.Email = acct.Email
	}
	t.fillFromJWTs()
	return t, nil
}

// errorCode finds the OAuth error code in an answer where Codex looks for
// it: OpenAI's {"error":{"code":…}}, RFC 6749's {"error":"invalid_grant"},
// or a top-level {"code":…}.
func errorCode(b []byte) string {
	var v struct {
		Error json.RawMessage `json:"error"`
		Code  string          `json:"code"`
	}
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	if len(v.Error) == 0 || string(v.Error) == "null" {
		return short(v.Code)
	}
	var s string
	if json.Unmarshal(v.Error, &s) == nil {
		return short(s)
	}
	var o struct {
		Code string `json:"code"`
		Type string `json:"type"`
	}
	if json.Unmarshal(v.Error, &o) == nil {
		if o.Code != "" {
			return short(o.Code)
		}
		if v.Code != "" {
			return short(v.Code)
		}
		return short(o.Type)
	}
	return short(v.Code)
}

// short keeps a code fit for a message: an identifier, not prose.
func short(s string) string {
	if len(s) > 64 || strings.ContainsAny(s, " \n\t\"") {
		return ""
	}
	return s
}

func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// refresh spends tok's refresh token for new tokens, with the fields its
// real client sends: client_id, grant_type, refresh_token, Claude Code's
// scope (Codex and Gemini CLI send none) and Gemini CLI's client_secret.
// A Claude login refreshes with the client and scopes it was stored with
// (claudeRefreshAs), and, as Claude Code, once more with its stored scopes
// alone when the widened set is refused as invalid_scope.
func refresh(ctx context.Context, c *http.Client, p Provider, tok Tokens, now time.Time) (Tokens, error) {
	f := map[string]string{"grant_type": "refresh_token", "refresh_token": tok.Refresh, "client_id": p.ClientID}
	var fallback string
	if p.RefreshScope != "" {
		f["scope"] = p.RefreshScope
	}
	if p.Name == NameAnthropic {
		var client, scope string
		client, scope, fallback = claudeRefreshAs(p, tok)
		f["client_id"] = client
		if scope != "" {
			f["scope"] = scope
		}
	}
	if p.ClientSecret != "" {
		f["client_secret"] = p.ClientSecret
	}
	t, err := call(ctx, c, p, f, now)
	var te *TokenError
	if fallback != "" && errors.As(err, &te) && te.Status == http.StatusBadRequest && te.Code == "invalid_scope" {
		f["scope"] = fallback
		return call(ctx, c, p, f, now)
	}
	return t, err
}

// exchange trades an authorization code for tokens.
func exchange(ctx context.Context, c *http.Client, p Provider, code, verifier, state, redirectURI string, now time.Time) (Tokens, error) {
	f := map[string]string{
		"grant_type": "authorization_code", "code": code, "redirect_uri": redirectURI,
		"client_id": p.ClientID, "code_verifier": verifier,
	}
	if p.Name == NameAnthropic {
		// Anthropic wants the state echoed in the exchange (CPA).
		f["state"] = state
	}
	if p.ClientSecret != "" {
		f["client_secret"] = p.ClientSecret
	}
	return call(ctx, c, p, f, now)
}
