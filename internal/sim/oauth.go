package sim

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The OAuth side of the two subscriptions: Claude (Anthropic) and ChatGPT
// (OpenAI), as protocols.md describes them.
//
//	GET  /oauth/authorize   PKCE S256 only; answers at once with a 302 to
//	                        redirect_uri?code=…&state=…, so a test client
//	                        plays the browser by following one redirect
//	GET  /cai/oauth/authorize  the same: the path of Claude Code 2.1.197's
//	                        claude.ai login page (claude.com/cai/…)
//	POST /v1/oauth/token    Anthropic: JSON body
//	POST /oauth/token       OpenAI: form or JSON body; Codex exchanges a
//	                        code with a form and refreshes with JSON
//
// and Google's (google_oauth.go): /o/oauth2/v2/auth, POST /token,
// /tokeninfo, GET /oauth2/v2/userinfo and POST /revoke.
//
// Both token endpoints take grant_type authorization_code (the PKCE
// verifier is checked) and refresh_token. Refresh tokens rotate on every
// refresh, and a used one is refused the way each provider refuses it:
// Anthropic {"error":"invalid_grant"} (400), OpenAI
// {"error":{"code":"refresh_token_reused"}} (401). That is the behaviour
// that makes two refreshers sharing one login clobber each other.

// Client ids of the real CLIs (protocols.md). The sim accepts any client
// id but holds every code and refresh token to the one it was issued to.
const (
	AnthropicClientID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
	OpenAIClientID    = "app_EMoamEEZ73f0CkXaXp7hrann"
)

// OAuthOptions shapes an OAuthServer. The zero value is usable.
type OAuthOptions struct {
	// AccessTTL is an access token's lifetime on the Server's clock.
	// Default one hour. Model routes answer the provider's "token
	// expired" 401 once it has passed.
	AccessTTL time.Duration
	// Email is the account that logs in. Default "user@example.com".
	Email string
	// Plan is the ChatGPT plan (chatgpt_plan_type). Default "plus".
	Plan string
	// AccountID is the ChatGPT account (chatgpt_account_id). Default a
	// random id, fixed for the server's life.
	AccountID string
	// Organization is the Claude organization's name. Default "Sim Org".
	Organization string
	// Google is the Google account a browser login and Grant("google")
	// log in; its Email defaults to Email, its Project to a fresh one per
	// login. GrantGoogle logs in any other.
	Google GoogleLogin
}

// OAuthStats counts what the token endpoints did.
type OAuthStats struct {
	Exchanges int // authorization codes exchanged for tokens
	Refreshes int // refresh_token grants received, whatever the answer
	Rotations int // refreshes that issued new tokens
	Reused    int // refreshes refused because the token had been used
	Revoked   int // refreshes refused because the token was revoked
	Scripted  int // refreshes answered by a scripted failure
}

// RefreshRequest is what a refresh_token grant carried, without its
// values: the shape a client sends, for tests that check it against the
// real clients' (Claude Code: JSON with a scope; Codex: JSON
// {client_id, grant_type, refresh_token} and no scope).
type RefreshRequest struct {
	Provider    string
	ContentType string   // the media type, without parameters
	Fields      []string // the body's field names, sorted
	Scope       string   // the scope field, "" when absent
}

// OAuthTokens is what a login hands a client.
type OAuthTokens struct {
	Provider  string // Anthropic, OpenAI or Google
	Access    string
	Refresh   string
	IDToken   string // OpenAI and Google: an unsigned JWT with the account claims
	AccountID string // OpenAI only
	Project   string // Google only: the login's Code Assist project
	Email     string
	ExpiresAt time.Time
}

// OAuthServer is the OAuth side of a Server. Its ServeHTTP answers the
// OAuth routes and hands every other request to the Server, after marking
// an expired access token so that the model routes refuse it. Start gives
// it a listener of its own; point both token_url and base_url there.
type OAuthServer struct {
	s *Server
	o OAuthOptions

	mu      sync.Mutex
	codes   map[string]*authCode
	refresh map[string]*refreshToken
	access  map[string]*accessToken
	script  []Step
	stats   OAuthStats
	lastRef *RefreshRequest

	srv *http.Server
	url string
}

type authCode struct {
	clientID, redirectURI, challenge string
	expires                          time.Time
}

type refreshToken struct {
	provider, clientID string
	used, revoked      bool
	login              *googleLogin // Google: the login it refreshes
}

type accessToken struct {
	provider string
	expires  time.Time
	marked   bool // the Server was told to refuse it
}

// OAuth returns a new OAuth server in front of s.
func (s *Server) OAuth(o OAuthOptions) *OAuthServer {
	if o.AccessTTL <= 0 {
		o.AccessTTL = time.Hour
	}
	if o.Email == "" {
		o.Email = "user@example.com"
	}
	if o.Plan == "" {
		o.Plan = "plus"
	}
	if o.AccountID == "" {
		o.AccountID = "acct_" + newID(20)
	}
	if o.Organization == "" {
		o.Organization = "Sim Org"
	}
	return &OAuthServer{s: s, o: o, codes: map[string]*authCode{}, refresh: map[string]*refreshToken{}, access: map[string]*accessToken{}}
}

// Start listens on a fresh loopback port. The listener serves the OAuth
// routes and, through the Server, every model route.
func (o *OAuthServer) Start() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.srv != nil {
		return errors.New("sim: OAuth server already started")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	o.srv = &http.Server{Handler: o, ReadHeaderTimeout: time.Minute}
	o.url = "http://" + ln.Addr().String()
	go o.srv.Serve(ln) //nolint:errcheck // always ErrServerClosed after Close
	return nil
}

// URL is "http://127.0.0.1:PORT" once started.
func (o *OAuthServer) URL() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.url
}

// Close stops the listener. The Server behind it has its own Close.
func (o *OAuthServer) Close() {
	o.mu.Lock()
	srv := o.srv
	o.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Stats returns the counters so far.
func (o *OAuthServer) Stats() OAuthStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stats
}

// LastRefresh is the shape of the last refresh_token grant received, and
// false before any.
func (o *OAuthServer) LastRefresh() (RefreshRequest, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lastRef == nil {
		return RefreshRequest{}, false
	}
	r := *o.lastRef
	r.Fields = slices.Clone(r.Fields)
	return r, true
}

// ScriptRefresh queues answers for the next refresh_token grants, one
// per grant, before any token is looked at: a Status (429, 5xx) with its
// Header and Body sent verbatim (a canned OAuth body when Body is empty),
// or Drop for a connection closed without an answer. Times repeats a step.
// The refresh token presented stays unused, as it would upstream.
func (o *OAuthServer) ScriptRefresh(steps ...Step) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, st := range steps {
		for range max(st.Times, 1) {
			o.script = append(o.script, st)
		}
	}
}

// Revoke kills a refresh token: the next refresh with it is refused as a
// revoked login (invalid_grant; refresh_token_invalidated at OpenAI).
func (o *OAuthServer) Revoke(refresh string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if rt := o.refresh[refresh]; rt != nil {
		rt.revoked = true
	}
}

// ExpireAccess makes the model routes refuse access as expired from now
// on, ahead of its lifetime: the upstream changing its mind, which only
// the auth_expired answer reveals.
func (o *OAuthServer) ExpireAccess(access string) {
	if o.s.expireGoogleToken(access) {
		return
	}
	o.mu.Lock()
	if at := o.access[access]; at != nil {
		at.expires = o.s.clk.Now()
	}
	o.mu.Unlock()
}

// Grant logs in without the browser, as if the user had done it with a
// CLI (the tokens an import test puts in the CLI's file). provider is
// Anthropic, OpenAI or Google (OAuthOptions.Google's account; see
// GrantGoogle).
func (o *OAuthServer) Grant(provider string) OAuthTokens {
	p := canonical(provider)
	if p == Google {
		return o.GrantGoogle(o.o.Google)
	}
	clientID := AnthropicClientID
	if p == OpenAI {
		clientID = OpenAIClientID
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.issueLocked(p, clientID)
}

// ServeHTTP answers the OAuth routes and passes everything else on.
func (o *OAuthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case (r.URL.Path == "/oauth/authorize" || r.URL.Path == "/cai/oauth/authorize") && r.Method == http.MethodGet:
		o.authorize(w, r)
		return
	case r.URL.Path == "/v1/oauth/token" && r.Method == http.MethodPost:
		o.token(w, r, Anthropic)
		return
	case r.URL.Path == "/oauth/token" && r.Method == http.MethodPost:
		o.token(w, r, OpenAI)
		return
	case o.googleRoute(w, r): // google_oauth.go
		return
	}
	if cred := credentialOf(r); cred != "" {
		o.checkAccess(cred)
	}
	o.s.ServeHTTP(w, r)
}

// checkAccess has the Server refuse an expired access token. The mark is
// made lazily, when the token is next presented, so no timer outlives a
// test and a fake clock needs no driving.
func (o *OAuthServer) checkAccess(token string) {
	o.mu.Lock()
	at := o.access[token]
	expired := at != nil && !at.marked && !o.s.clk.Now().Before(at.expires)
	if expired {
		at.marked = true
	}
	o.mu.Unlock()
	if expired {
		o.s.Always(token, TokenExpired(at.provider))
	}
}

func (o *OAuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect := q.Get("redirect_uri")
	ru, err := url.Parse(redirect)
	if err != nil || ru.Scheme == "" || ru.Host == "" {
		http.Error(w, "redirect_uri missing or not absolute", http.StatusBadRequest)
		return
	}
	fail := func(code, desc string) {
		v := ru.Query()
		v.Set("error", code)
		v.Set("error_description", desc)
		v.Set("state", q.Get("state"))
		ru.RawQuery = v.Encode()
		http.Redirect(w, r, ru.String(), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "response_type must be code")
		return
	case q.Get("client_id") == "":
		fail("invalid_request", "client_id is required")
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "PKCE with code_challenge_method=S256 is required")
		return
	case q.Get("state") == "":
		fail("invalid_request", "state is required")
		return
	}
	code := newID(40)
	o.mu.Lock()
	o.codes[code] = &authCode{clientID: q.Get("client_id"), redirectURI: redirect, challenge: q.Get("code_challenge"),
		expires: o.s.clk.Now().Add(10 * time.Minute)}
	o.mu.Unlock()
	v := ru.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	ru.RawQuery = v.Encode()
	http.Redirect(w, r, ru.String(), http.StatusFound)
}

// tokenRequest is the union of both providers' token request fields.
type tokenRequest struct {
	GrantType    string `json:"grant_type"`
	Code         string `json:"code"`
	RedirectURI  string `json:"redirect_uri"`
	ClientID     string `json:"client_id"`
	CodeVerifier string `json:"code_verifier"`
	RefreshToken string `json:"refresh_token"`
	State        string `json:"state"`
	Scope        string `json:"scope"`
}

func (o *OAuthServer) token(w http.ResponseWriter, r *http.Request, provider string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	var req tokenRequest
	var fields []string
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case ct == "application/json":
		var m map[string]json.RawMessage
		if err = json.Unmarshal(body, &m); err == nil {
			err = json.Unmarshal(body, &req)
		}
		fields = slices.Sorted(maps.Keys(m))
	case ct == "application/x-www-form-urlencoded" && provider == OpenAI:
		var v url.Values
		v, err = url.ParseQuery(string(body))
		req = tokenRequest{GrantType: v.Get("grant_type"), Code: v.Get("code"), RedirectURI: v.Get("redirect_uri"),
			ClientID: v.Get("client_id"), CodeVerifier: v.Get("code_verifier"), RefreshToken: v.Get("refresh_token"),
			State: v.Get("state"), Scope: v.Get("scope")}
		fields = slices.Sorted(maps.Keys(v))
	default:
		err = errors.New("unsupported content type")
	}
	if err != nil {
		oauthError(w, provider, http.StatusBadRequest, "invalid_request", "unreadable token request body")
		return
	}
	switch req.GrantType {
	case "authorization_code":
		o.exchange(w, provider, req)
	case "refresh_token":
		o.mu.Lock()
		o.lastRef = &RefreshRequest{Provider: provider, ContentType: ct, Fields: fields, Scope: req.Scope}
		o.mu.Unlock()
		o.refreshGrant(w, provider, req)
	default:
		oauthError(w, provider, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

func (o *OAuthServer) exchange(w http.ResponseWriter, provider string, req tokenRequest) {
	o.mu.Lock()
	c := o.codes[req.Code]
	delete(o.codes, req.Code) // single use, whatever happens next
	now := o.s.clk.Now()
	var why string
	switch {
	case c == nil:
		why = "authorization code not found or already used"
	case !now.Before(c.expires):
		why = "authorization code expired"
	case c.clientID != req.ClientID:
		why = "client_id does not match the authorization request"
	case c.redirectURI != req.RedirectURI:
		why = "redirect_uri does not match the authorization request"
	case !pkceMatches(req.CodeVerifier, c.challenge):
		why = "code_verifier does not match the code_challenge"
	}
	if why != "" {
		o.mu.Unlock()
		oauthError(w, provider, http.StatusBadRequest, "invalid_grant", why)
		return
	}
	o.stats.Exchanges++
	t := o.issueLocked(provider, req.ClientID)
	o.mu.Unlock()
	o.writeTokens(w, t)
}

func pkceMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false // RFC 7636 §4.1
	}
	sum := sha256.Sum256([]byte(verifier))
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) == 1
}

func (o *OAuthServer) refreshGrant(w http.ResponseWriter, provider string, req tokenRequest) {
	o.mu.Lock()
	o.stats.Refreshes++
	if o.scriptedLocked(w, provider) {
		return
	}
	rt := o.refresh[req.RefreshToken]
	switch {
	case rt == nil || rt.provider != provider || rt.clientID != req.ClientID:
		o.mu.Unlock()
		oauthError(w, provider, http.StatusBadRequest, "invalid_grant", "refresh token not found or invalid")
		return
	case rt.revoked:
		o.stats.Revoked++
		o.mu.Unlock()
		refuseSpent(w, provider, "refresh_token_invalidated", "Your refresh token has been invalidated. Please try signing in again.",
			"refresh token has been revoked")
		return
	case rt.used:
		o.stats.Reused++
		o.mu.Unlock()
		refuseSpent(w, provider, "refresh_token_reused", "Your refresh token has already been used to generate a new access token. Please try signing in again.",
			"refresh token not found or invalid")
		return
	}
	rt.used = true
	o.stats.Rotations++
	t := o.issueLocked(provider, rt.clientID)
	o.mu.Unlock()
	o.writeTokens(w, t)
}

// scriptedLocked answers a refresh grant with the next ScriptRefresh step,
// if any, and reports whether it did. It requires o.mu and releases it
// when it answers.
func (o *OAuthServer) scriptedLocked(w http.ResponseWriter, provider string) bool {
	if len(o.script) == 0 {
		return false
	}
	st := o.script[0]
	o.script = o.script[1:]
	o.stats.Scripted++
	o.mu.Unlock()
	if st.Drop {
		panic(http.ErrAbortHandler)
	}
	for k, v := range st.Header {
		w.Header().Set(k, v)
	}
	status := st.Status
	if status == 0 {
		status = http.StatusServiceUnavailable
	}
	if st.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, st.Body)
		return true
	}
	code := "server_error"
	if status == http.StatusTooManyRequests {
		code = "rate_limit_exceeded"
	}
	oauthError(w, provider, status, code, http.StatusText(status))
	return true
}

// refuseSpent refuses a refresh token that can no longer be used, as each
// provider does: OpenAI with a 401 and a code that says why, Anthropic
// with a 400 invalid_grant.
func refuseSpent(w http.ResponseWriter, provider, openAICode, openAIMsg, anthropicMsg string) {
	if provider == OpenAI {
		oauthError(w, provider, http.StatusUnauthorized, openAICode, openAIMsg)
		return
	}
	oauthError(w, provider, http.StatusBadRequest, "invalid_grant", anthropicMsg)
}

// issueLocked mints a new login's worth of tokens. It requires o.mu.
func (o *OAuthServer) issueLocked(provider, clientID string) OAuthTokens {
	now := o.s.clk.Now()
	exp := now.Add(o.o.AccessTTL)
	t := OAuthTokens{Provider: provider, Email: o.o.Email, ExpiresAt: exp}
	if provider == Anthropic {
		t.Access = "sk-ant-oat01-sim" + newID(48)
		t.Refresh = "sk-ant-ort01-sim" + newID(48)
	} else {
		t.Refresh = "rt_sim" + newID(48)
		auth := obj{"chatgpt_account_id": o.o.AccountID, "chatgpt_plan_type": o.o.Plan, "chatgpt_user_id": "user-sim", "user_id": "user-sim"}
		t.AccountID = o.o.AccountID
		t.Access = unsignedJWT(obj{
			"iss": "https://auth.openai.com", "aud": []string{"https://api.openai.com/v1"}, "client_id": clientID,
			"sub": "user-sim", "iat": now.Unix(), "exp": exp.Unix(), "jti": newID(24),
			"scp":                            []string{"openid", "profile", "email", "offline_access", "api.connectors.read", "api.connectors.invoke"},
			"https://api.openai.com/auth":    auth,
			"https://api.openai.com/profile": obj{"email": o.o.Email, "email_verified": true},
		})
		// The real id token lists every organization of the account,
		// which is what pushes it past the OS keychains' item limits.
		orgs := make([]obj, 0, 12)
		for i := range 12 {
			orgs = append(orgs, obj{"id": "org-" + newID(24), "is_default": i == 0, "role": "owner", "title": "Personal " + strconv.Itoa(i)})
		}
		idAuth := obj{"organizations": orgs, "groups": []string{}}
		for k, v := range auth {
			idAuth[k] = v
		}
		t.IDToken = unsignedJWT(obj{
			"iss": "https://auth.openai.com", "aud": []string{clientID}, "sub": "user-sim",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "auth_time": now.Unix(),
			"email": o.o.Email, "email_verified": true,
			"https://api.openai.com/auth": idAuth,
		})
	}
	o.refresh[t.Refresh] = &refreshToken{provider: provider, clientID: clientID}
	o.access[t.Access] = &accessToken{provider: provider, expires: exp}
	return t
}

func (o *OAuthServer) writeTokens(w http.ResponseWriter, t OAuthTokens) {
	secs := int(o.o.AccessTTL / time.Second)
	var body obj
	if t.Provider == Anthropic {
		body = obj{
			"token_type": "Bearer", "access_token": t.Access, "refresh_token": t.Refresh, "expires_in": secs,
			"scope":        "user:inference user:profile user:sessions:claude_code user:mcp_servers user:file_upload",
			"account":      obj{"uuid": "sim-account-uuid", "email_address": t.Email},
			"organization": obj{"uuid": "sim-org-uuid", "name": o.o.Organization},
		}
	} else {
		body = obj{
			"token_type": "Bearer", "access_token": t.Access, "refresh_token": t.Refresh, "id_token": t.IDToken,
			"expires_in": secs, "scope": "openid profile email offline_access api.connectors.read api.connectors.invoke",
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(body)
}

// oauthError writes a token endpoint's refusal: RFC 6749 at Anthropic
// ({"error":"invalid_grant","error_description":…}), OpenAI's own error
// object for its refresh-token codes.
func oauthError(w http.ResponseWriter, provider string, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if provider == OpenAI && strings.HasPrefix(code, "refresh_token_") {
		w.Write(openaiError(desc, "invalid_request_error", code))
		return
	}
	b, _ := json.Marshal(obj{"error": code, "error_description": desc})
	w.Write(b)
}

func unsignedJWT(claims obj) string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(obj{"alg": "none", "typ": "JWT"})
	p, _ := json.Marshal(claims)
	return enc.EncodeToString(h) + "." + enc.EncodeToString(p) + "."
}
