package sim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Google's OAuth endpoints, as google-auth-library (inside Gemini CLI)
// calls them:
//
//	GET  /o/oauth2/v2/auth    accounts.google.com: PKCE S256, 302 with the code
//	POST /token               oauth2.googleapis.com: form-encoded grants
//	POST /tokeninfo           what an access token is (GET ?access_token= too)
//	GET  /oauth2/v2/userinfo  www.googleapis.com: the account's email
//	POST /revoke              oauth2.googleapis.com: forget a token
//
// The token endpoint holds a client to its secret: Gemini CLI's installed
// app (GoogleClientID and GoogleClientSecret, from the CLI's package) is
// the one client it knows. Unlike Anthropic and OpenAI, Google does not
// rotate refresh tokens: a refresh answers a new access token and no
// refresh_token, and the refresh token lives until revoked, when it is
// refused with invalid_grant "Token has been expired or revoked."

// Gemini CLI's OAuth client (packages/core/src/code_assist/oauth2.ts). An
// installed app's secret is public by design; it proves nothing but the
// app's identity.
const (
	GoogleClientID     = "681255809395-oo8ft2oprdrnp9e3aqf6av3hmdib135j.apps.googleusercontent.com"
	GoogleClientSecret = "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"
)

// googleScope is what Gemini CLI asks for, as Google echoes it (with the
// openid its userinfo scopes imply).
const googleScope = "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile openid"

// GrantGoogle logs l in without the browser, as if the user had done it
// with Gemini CLI: the tokens an import test writes to ~/.gemini/
// oauth_creds.json. The access token reaches Code Assist on the Server
// until it expires (AccessTTL); the refresh token renews it.
func (o *OAuthServer) GrantGoogle(l GoogleLogin) OAuthTokens {
	if l.Email == "" {
		l.Email = o.o.Email
	}
	o.s.mu.Lock()
	gl := o.s.newGoogleLoginLocked(l)
	o.s.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.issueGoogleLocked(gl, GoogleClientID, true)
}

func (o *OAuthServer) googleRoute(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case r.URL.Path == "/o/oauth2/v2/auth" && r.Method == http.MethodGet:
		o.authorize(w, r)
	case r.URL.Path == "/token" && r.Method == http.MethodPost:
		o.googleTokenEndpoint(w, r)
	case r.URL.Path == "/tokeninfo" && (r.Method == http.MethodPost || r.Method == http.MethodGet):
		o.googleTokenInfo(w, r)
	case r.URL.Path == "/oauth2/v2/userinfo" && r.Method == http.MethodGet:
		o.googleUserinfo(w, r)
	case r.URL.Path == "/revoke" && r.Method == http.MethodPost:
		o.googleRevoke(w, r)
	default:
		return false
	}
	return true
}

// googleForm reads a form (or JSON) body, with the field names sent.
func googleForm(r *http.Request) (url.Values, string, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, "", err
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, ct, err
		}
		v := url.Values{}
		for k, f := range m {
			if s, ok := f.(string); ok {
				v.Set(k, s)
			}
		}
		return v, ct, nil
	}
	v, err := url.ParseQuery(string(body))
	return v, ct, err
}

func (o *OAuthServer) googleTokenEndpoint(w http.ResponseWriter, r *http.Request) {
	v, ct, err := googleForm(r)
	if err != nil {
		oauthError(w, Google, http.StatusBadRequest, "invalid_request", "Invalid request body.")
		return
	}
	clientID, secret := v.Get("client_id"), v.Get("client_secret")
	if id, sec, ok := r.BasicAuth(); ok {
		clientID, secret = id, sec
	}
	if v.Get("grant_type") == "refresh_token" {
		o.mu.Lock()
		o.lastRef = &RefreshRequest{Provider: Google, ContentType: ct, Fields: slices.Sorted(maps.Keys(v)), Scope: v.Get("scope")}
		o.mu.Unlock()
	}
	switch {
	case clientID != GoogleClientID:
		oauthError(w, Google, http.StatusUnauthorized, "invalid_client", "The OAuth client was not found.")
		return
	case secret != GoogleClientSecret:
		oauthError(w, Google, http.StatusUnauthorized, "invalid_client", "Unauthorized")
		return
	}
	switch v.Get("grant_type") {
	case "authorization_code":
		o.googleExchange(w, v, clientID)
	case "refresh_token":
		o.googleRefresh(w, v.Get("refresh_token"), clientID)
	case "":
		oauthError(w, Google, http.StatusBadRequest, "invalid_request", "Required parameter is missing: grant_type")
	default:
		oauthError(w, Google, http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type: "+v.Get("grant_type"))
	}
}

func (o *OAuthServer) googleExchange(w http.ResponseWriter, v url.Values, clientID string) {
	o.mu.Lock()
	c := o.codes[v.Get("code")]
	delete(o.codes, v.Get("code"))
	now := o.s.clk.Now()
	code, why := "", ""
	switch {
	case c == nil:
		code, why = "invalid_grant", "Malformed auth code."
	case !now.Before(c.expires), c.clientID != clientID:
		code, why = "invalid_grant", "Bad Request"
	case c.redirectURI != v.Get("redirect_uri"):
		code, why = "redirect_uri_mismatch", "Bad Request"
	case !pkceMatches(v.Get("code_verifier"), c.challenge):
		code, why = "invalid_grant", "Invalid code verifier."
	}
	if why != "" {
		o.mu.Unlock()
		oauthError(w, Google, http.StatusBadRequest, code, why)
		return
	}
	o.stats.Exchanges++
	o.mu.Unlock()
	l := o.o.Google
	if l.Email == "" {
		l.Email = o.o.Email
	}
	o.s.mu.Lock()
	gl := o.s.newGoogleLoginLocked(l)
	o.s.mu.Unlock()
	o.mu.Lock()
	t := o.issueGoogleLocked(gl, clientID, true)
	o.mu.Unlock()
	o.writeGoogleTokens(w, t)
}

func (o *OAuthServer) googleRefresh(w http.ResponseWriter, refresh, clientID string) {
	o.mu.Lock()
	o.stats.Refreshes++
	if o.scriptedLocked(w, Google) {
		return
	}
	rt := o.refresh[refresh]
	switch {
	case rt == nil || rt.provider != Google:
		o.mu.Unlock()
		oauthError(w, Google, http.StatusBadRequest, "invalid_grant", "Bad Request")
		return
	case rt.clientID != clientID:
		o.mu.Unlock()
		oauthError(w, Google, http.StatusUnauthorized, "unauthorized_client", "Unauthorized")
		return
	case rt.revoked:
		o.stats.Revoked++
		o.mu.Unlock()
		oauthError(w, Google, http.StatusBadRequest, "invalid_grant", "Token has been expired or revoked.")
		return
	}
	o.stats.Rotations++
	t := o.issueGoogleLocked(rt.login, clientID, false) // no new refresh token, as Google
	o.mu.Unlock()
	o.writeGoogleTokens(w, t)
}

// issueGoogleLocked mints an access token (and, for a new login, its
// refresh token) for gl. It requires o.mu.
func (o *OAuthServer) issueGoogleLocked(gl *googleLogin, clientID string, withRefresh bool) OAuthTokens {
	now := o.s.clk.Now()
	exp := now.Add(o.o.AccessTTL)
	o.s.mu.Lock()
	email, project, sub := gl.cfg.Email, gl.cfg.Project, gl.sub
	o.s.mu.Unlock()
	t := OAuthTokens{Provider: Google, Email: email, Project: project, ExpiresAt: exp,
		Access: "ya29.a0" + newID(160)}
	sum := sha256.Sum256([]byte(t.Access))
	t.IDToken = unsignedJWT(obj{
		"iss": "https://accounts.google.com", "azp": clientID, "aud": clientID, "sub": sub,
		"email": email, "email_verified": true,
		"at_hash": base64.RawURLEncoding.EncodeToString(sum[:16]),
		"iat":     now.Unix(), "exp": now.Add(time.Hour).Unix(),
	})
	if withRefresh {
		t.Refresh = "1//0" + newID(100)
		o.refresh[t.Refresh] = &refreshToken{provider: Google, clientID: clientID, login: gl}
	}
	o.s.addGoogleToken(t.Access, gl, exp)
	return t
}

// googleExpiresIn is the lifetime Google announces: a second short of the
// token's, 3599 for an hour.
func (o *OAuthServer) googleExpiresIn() int {
	return max(int(o.o.AccessTTL/time.Second)-1, 1)
}

func (o *OAuthServer) writeGoogleTokens(w http.ResponseWriter, t OAuthTokens) {
	body := obj{"access_token": t.Access, "expires_in": o.googleExpiresIn(), "scope": googleScope,
		"token_type": "Bearer", "id_token": t.IDToken}
	if t.Refresh != "" {
		body["refresh_token"] = t.Refresh
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-store, max-age=0, must-revalidate")
	h.Set("Pragma", "no-cache")
	json.NewEncoder(w).Encode(body)
}

// googleBearerOrParam is the access token a tokeninfo or userinfo call
// names: the bearer, else access_token in the query or form.
func googleBearerOrParam(r *http.Request) string {
	if t := bearer(r); t != "" {
		return t
	}
	if t := r.URL.Query().Get("access_token"); t != "" {
		return t
	}
	if r.Method == http.MethodPost {
		v, _, _ := googleForm(r)
		return v.Get("access_token")
	}
	return ""
}

// googleTokenInfo answers what an access token is; google-auth-library's
// getTokenInfo reads expires_in and scope, and Gemini CLI calls it on every
// start with cached credentials.
func (o *OAuthServer) googleTokenInfo(w http.ResponseWriter, r *http.Request) {
	token := googleBearerOrParam(r)
	gl, state := o.s.googleToken(token)
	if state != tokenValid {
		oauthError(w, Google, http.StatusBadRequest, "invalid_token", "Invalid Value")
		return
	}
	o.s.mu.Lock()
	exp := o.s.google.access[token].expires
	email, sub := gl.cfg.Email, gl.sub
	o.s.mu.Unlock()
	left := googleDay * 365 // AddGoogleLogin's tokens never expire
	if !exp.IsZero() {
		left = exp.Sub(o.s.clk.Now())
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	json.NewEncoder(w).Encode(obj{
		"azp": GoogleClientID, "aud": GoogleClientID, "sub": sub, "scope": googleScope,
		"exp":        strconv.FormatInt(o.s.clk.Now().Add(left).Unix(), 10),
		"expires_in": strconv.Itoa(max(int(left/time.Second), 0)),
		"email":      email, "email_verified": "true", "access_type": "offline",
	})
}

// googleUserinfo answers GET /oauth2/v2/userinfo, where Gemini CLI learns
// the account's email.
func (o *OAuthServer) googleUserinfo(w http.ResponseWriter, r *http.Request) {
	token := bearer(r)
	gl, state := o.s.googleToken(token)
	if state != tokenValid {
		msg := msgBadCredential
		if token == "" {
			msg = msgNoCredential
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, googleErr{code: 401, status: "UNAUTHENTICATED", message: msg}.body(false))
		return
	}
	o.s.mu.Lock()
	email, sub := gl.cfg.Email, gl.sub
	o.s.mu.Unlock()
	local, _, _ := strings.Cut(email, "@")
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	json.NewEncoder(w).Encode(obj{
		"id": sub, "email": email, "verified_email": true, "name": local, "given_name": local,
		"picture": "https://lh3.googleusercontent.com/a/default-user=s96-c",
	})
}

// googleRevoke answers POST /revoke?token=…: a refresh token is refused
// from then on, an access token expires.
func (o *OAuthServer) googleRevoke(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	if token == "" {
		v, _, _ := googleForm(r)
		token = v.Get("token")
	}
	o.mu.Lock()
	rt := o.refresh[token]
	if rt != nil && rt.provider == Google {
		rt.revoked = true
	}
	o.mu.Unlock()
	if rt == nil && !o.s.expireGoogleToken(token) {
		oauthError(w, Google, http.StatusBadRequest, "invalid_token", "Token expired or revoked")
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	io.WriteString(w, "{}")
}
