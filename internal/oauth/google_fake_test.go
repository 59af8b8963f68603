package oauth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGoogle is Google's OAuth side as Gemini CLI meets it: the consent
// page (which answers at once with the redirect, so a test client plays
// the browser), the token endpoint (forms only, the client secret
// required, PKCE checked when a challenge was sent, refreshes answered
// without a new refresh token, invalid_grant for a dead one) and
// userinfo. Answers are shaped like Google's.
type fakeGoogle struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	email      string // the account
	idNoEmail  bool   // the id token leaves the email out
	userinfoKO bool   // userinfo answers 500
	// allowed: the account has allowed the client before, so without
	// prompt=consent Google shows no consent screen and its code brings
	// no refresh token.
	allowed   bool
	codes     map[string]grantReq
	refresh   map[string]bool // live refresh tokens
	access    map[string]bool // live access tokens
	n         int
	forms     []url.Values // every token request, as sent
	ctypes    []string
	refreshes int
}

type grantReq struct {
	challenge, redirect string
	noRefresh           bool
}

func newFakeGoogle(t *testing.T) *fakeGoogle {
	g := &fakeGoogle{t: t, email: "ada.lovelace@gmail.com", codes: map[string]grantReq{}, refresh: map[string]bool{}, access: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /o/oauth2/v2/auth", g.authorize)
	mux.HandleFunc("POST /token", g.token)
	mux.HandleFunc("GET /oauth2/v2/userinfo", g.userinfo)
	g.srv = httptest.NewServer(mux)
	t.Cleanup(g.srv.Close)
	return g
}

// provider is Google() pointed at the fake, with its loopback redirect
// on a free port.
func (g *fakeGoogle) provider() Provider {
	p := Google(g.srv.URL+"/token", "https://cloudcode-pa.example.test/")
	p.AuthorizeURL = g.srv.URL + "/o/oauth2/v2/auth"
	p.UserInfoURL = g.srv.URL + "/oauth2/v2/userinfo"
	return p
}

func (g *fakeGoogle) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect := q.Get("redirect_uri")
	u, err := url.Parse(redirect)
	loopback := err == nil && u.Scheme == "http" && u.Hostname() == "127.0.0.1" && u.Port() != "" && u.Path == "/oauth2callback"
	if q.Get("client_id") != GoogleClientID || q.Get("response_type") != "code" || q.Get("access_type") != "offline" ||
		q.Get("scope") != GoogleScope || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
		(!loopback && redirect != GooglePasteRedirectURI) {
		http.Error(w, "Error 400: invalid_request", http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	g.n++
	code := fmt.Sprintf("4/0AVG7fiQ-code-%d", g.n)
	g.codes[code] = grantReq{challenge: q.Get("code_challenge"), redirect: redirect, noRefresh: g.allowed && q.Get("prompt") != "consent"}
	g.mu.Unlock()
	back := url.Values{"state": {q.Get("state")}, "code": {code}, "scope": {"email profile https://www.googleapis.com/auth/cloud-platform openid https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile"}, "authuser": {"0"}, "prompt": {"consent"}}
	http.Redirect(w, r, redirect+"?"+back.Encode(), http.StatusFound)
}

func (g *fakeGoogle) token(w http.ResponseWriter, r *http.Request) {
	ctype := r.Header.Get("Content-Type")
	b, _ := io.ReadAll(r.Body)
	f, err := url.ParseQuery(string(b))
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forms = append(g.forms, f)
	g.ctypes = append(g.ctypes, ctype)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fail := func(status int, code, desc string) {
		w.WriteHeader(status)
		fmt.Fprintf(w, "{\n  \"error\": %q,\n  \"error_description\": %q\n}", code, desc)
	}
	if err != nil || !strings.HasPrefix(ctype, "application/x-www-form-urlencoded") {
		fail(400, "invalid_request", "Invalid request.")
		return
	}
	if f.Get("client_id") != GoogleClientID || f.Get("client_secret") != GoogleClientSecret {
		fail(401, "invalid_client", "Unauthorized")
		return
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		gr, ok := g.codes[f.Get("code")]
		delete(g.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || gr.redirect != f.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != gr.challenge {
			fail(400, "invalid_grant", "Bad Request")
			return
		}
		rt := ""
		if !gr.noRefresh {
			g.n++
			rt = fmt.Sprintf("1//0gLxRefreshToken-%d", g.n)
			g.refresh[rt] = true
		}
		g.answer(w, rt)
	case "refresh_token":
		g.refreshes++
		if !g.refresh[f.Get("refresh_token")] {
			fail(400, "invalid_grant", "Token has been expired or revoked.")
			return
		}
		g.answer(w, "")
	default:
		fail(400, "unsupported_grant_type", "Invalid grant_type: "+f.Get("grant_type"))
	}
}

// answer writes a token answer in Google's shape; a refresh's has no
// refresh_token. It requires g.mu.
func (g *fakeGoogle) answer(w http.ResponseWriter, refresh string) {
	g.n++
	at := fmt.Sprintf("ya29.a0AfB_access-%d", g.n)
	g.access[at] = true
	a := map[string]any{
		"access_token": at, "expires_in": 3599, "token_type": "Bearer",
		"scope":    "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/userinfo.profile openid https://www.googleapis.com/auth/userinfo.email",
		"id_token": g.idToken(),
	}
	if refresh != "" {
		a["refresh_token"] = refresh
	}
	json.NewEncoder(w).Encode(a)
}

func (g *fakeGoogle) idToken() string {
	c := map[string]any{"iss": "https://accounts.google.com", "azp": GoogleClientID, "aud": GoogleClientID, "sub": "109876543210987654321", "at_hash": "x1", "iat": 1772366400, "exp": 1772370000}
	if !g.idNoEmail {
		c["email"], c["email_verified"] = g.email, true
	}
	p, _ := json.Marshal(c)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","kid":"k1","typ":"JWT"}`)) + "." + enc(p) + "." + enc([]byte("signature"))
}

func (g *fakeGoogle) userinfo(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if g.userinfoKO {
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}`)
		return
	}
	if !g.access[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] {
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"code":401,"message":"Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.","status":"UNAUTHENTICATED"}}`)
		return
	}
	fmt.Fprintf(w, `{"id":"109876543210987654321","email":%q,"verified_email":true,"name":"Ada Lovelace","given_name":"Ada","family_name":"Lovelace","picture":"https://lh3.googleusercontent.com/a/ACg8ocK"}`, g.email)
}

// grant is a login issued outright, as if logged in elsewhere.
func (g *fakeGoogle) grant(now time.Time) Tokens {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	rt, at := fmt.Sprintf("1//0gLxRefreshToken-%d", g.n), fmt.Sprintf("ya29.a0AfB_access-%d", g.n)
	g.refresh[rt], g.access[at] = true, true
	return Tokens{Access: at, Refresh: rt, IDToken: g.idToken(), ExpiresAt: now.Add(3599 * time.Second).Truncate(time.Millisecond)}
}

func (g *fakeGoogle) revoke(refresh string) {
	g.mu.Lock()
	delete(g.refresh, refresh)
	g.mu.Unlock()
}

func (g *fakeGoogle) valid(access string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.access[access]
}

func (g *fakeGoogle) stats() (forms []url.Values, ctypes []string, refreshes int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]url.Values(nil), g.forms...), append([]string(nil), g.ctypes...), g.refreshes
}
