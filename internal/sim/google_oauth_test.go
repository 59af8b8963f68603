package sim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// googleToken posts a form to /token the way google-auth-library does.
func googleTokenCall(t *testing.T, oa *OAuthServer, fields url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(oa.URL()+"/token", "application/x-www-form-urlencoded", strings.NewReader(fields.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("token answer: %v", err)
	}
	return resp.StatusCode, m
}

func refreshForm(refresh string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh},
		"client_id": {GoogleClientID}, "client_secret": {GoogleClientSecret}}
}

// The browser login Gemini CLI runs, end to end: authorize with PKCE,
// exchange the code with the client's secret, call Code Assist.
func TestGoogleLogin(t *testing.T) {
	oa, s, _ := startOAuth(t, OAuthOptions{Email: "me@example.com", Google: GoogleLogin{Project: "login-project"}})
	verifier := strings.Repeat("v", 43)
	q := url.Values{"response_type": {"code"}, "client_id": {GoogleClientID}, "redirect_uri": {"http://127.0.0.1:9/oauth2callback"},
		"code_challenge": {challengeOf(verifier)}, "code_challenge_method": {"S256"}, "state": {"st"},
		"access_type": {"offline"}, "scope": {"https://www.googleapis.com/auth/cloud-platform"}}
	resp, err := noRedirect.Get(oa.URL() + "/o/oauth2/v2/auth?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	code := loc.Query().Get("code")
	if resp.StatusCode != http.StatusFound || code == "" || loc.Query().Get("state") != "st" {
		t.Fatalf("authorize %d %s", resp.StatusCode, loc)
	}
	exchange := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"redirect_uri": {"http://127.0.0.1:9/oauth2callback"}, "client_id": {GoogleClientID}, "client_secret": {GoogleClientSecret}}

	// The client is held to its secret, before the code is looked at.
	for name, tc := range map[string]struct {
		field, value, err, desc string
	}{
		"wrong secret":   {"client_secret", "GOCSPX-wrong", "invalid_client", "Unauthorized"},
		"no secret":      {"client_secret", "", "invalid_client", "Unauthorized"},
		"unknown client": {"client_id", "123-other.apps.googleusercontent.com", "invalid_client", "The OAuth client was not found."},
	} {
		f := url.Values{}
		for k, v := range exchange {
			f[k] = v
		}
		f.Set(tc.field, tc.value)
		if status, m := googleTokenCall(t, oa, f); status != 401 || m["error"] != tc.err || m["error_description"] != tc.desc {
			t.Errorf("%s: %d %v", name, status, m)
		}
	}

	status, m := googleTokenCall(t, oa, exchange)
	if status != 200 || m["token_type"] != "Bearer" || m["expires_in"] != float64(3599) || m["refresh_token"] == nil ||
		!strings.Contains(m["scope"].(string), "https://www.googleapis.com/auth/cloud-platform") {
		t.Fatalf("exchange %d %v", status, m)
	}
	if c := jwtClaims(t, m["id_token"].(string)); c["email"] != "me@example.com" || c["aud"] != GoogleClientID || c["iss"] != "https://accounts.google.com" {
		t.Errorf("id_token %v", c)
	}
	access := m["access_token"].(string)
	if !strings.HasPrefix(access, "ya29.") || !strings.HasPrefix(m["refresh_token"].(string), "1//") {
		t.Errorf("token shapes %q", access)
	}
	// The code is single use.
	if status, m := googleTokenCall(t, oa, exchange); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("reused code: %d %v", status, m)
	}
	if oa.Stats().Exchanges != 1 {
		t.Errorf("stats %+v", oa.Stats())
	}

	// The token reaches Code Assist, through the OAuth server's listener.
	req, _ := http.NewRequest("POST", oa.URL()+"/v1internal:loadCodeAssist", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+access)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var load map[string]any
	json.NewDecoder(r.Body).Decode(&load)
	r.Body.Close()
	if r.StatusCode != 200 || load["cloudaicompanionProject"] != "login-project" {
		t.Errorf("loadCodeAssist with the login: %d %v", r.StatusCode, load)
	}
	if recs := s.Requests(); len(recs) != 1 || recs[0].Credential != access {
		t.Errorf("records %+v", recs)
	}
}

func TestGoogleExchangeRefusals(t *testing.T) {
	oa, _, _ := startOAuth(t, OAuthOptions{})
	verifier := strings.Repeat("w", 50)
	codeFor := func() string {
		loc := authorize(t, oa, GoogleClientID, "http://127.0.0.1:9/cb", challengeOf(verifier), "s")
		return loc.Query().Get("code")
	}
	for name, tc := range map[string]struct {
		code, verifier, redirect, err string
	}{
		"bad verifier":   {codeFor(), strings.Repeat("x", 50), "http://127.0.0.1:9/cb", "invalid_grant"},
		"other redirect": {codeFor(), verifier, "http://127.0.0.1:9/elsewhere", "redirect_uri_mismatch"},
		"made-up code":   {"4/0never", verifier, "http://127.0.0.1:9/cb", "invalid_grant"},
	} {
		f := url.Values{"grant_type": {"authorization_code"}, "code": {tc.code}, "code_verifier": {tc.verifier},
			"redirect_uri": {tc.redirect}, "client_id": {GoogleClientID}, "client_secret": {GoogleClientSecret}}
		if status, m := googleTokenCall(t, oa, f); status != 400 || m["error"] != tc.err {
			t.Errorf("%s: %d %v", name, status, m)
		}
	}
	if status, m := googleTokenCall(t, oa, url.Values{"client_id": {GoogleClientID}, "client_secret": {GoogleClientSecret}, "grant_type": {"password"}}); status != 400 || m["error"] != "unsupported_grant_type" {
		t.Errorf("grant type: %d %v", status, m)
	}
}

// Google refreshes without rotating: a new access token, no refresh
// token, the same login (project and day) behind it.
func TestGoogleRefresh(t *testing.T) {
	oa, _, clk := startOAuth(t, OAuthOptions{AccessTTL: 10 * time.Minute})
	tok := oa.Grant("gemini")
	if tok.Provider != Google || tok.Project == "" || tok.Refresh == "" || !tok.ExpiresAt.Equal(epoch.Add(10*time.Minute)) {
		t.Fatalf("grant %+v", tok)
	}
	generate := func(access string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", oa.URL()+assistPath, strings.NewReader(assistBody(tok.Project, "gemini-2.5-pro", geminiBodyHi)))
		req.Header.Set("Authorization", "Bearer "+access)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b json.RawMessage
		json.NewDecoder(resp.Body).Decode(&b)
		return resp.StatusCode, b
	}
	if status, b := generate(tok.Access); status != 200 {
		t.Fatalf("%d %s", status, b)
	}
	clk.Advance(10 * time.Minute)
	status, b := generate(tok.Access)
	if reason, _, _ := googleError(t, b).errorInfo(t); status != 401 || reason != "ACCESS_TOKEN_EXPIRED" {
		t.Errorf("expired: %d %s", status, b)
	}

	status, m := googleTokenCall(t, oa, refreshForm(tok.Refresh))
	if status != 200 || m["refresh_token"] != nil || m["expires_in"] != float64(599) || m["access_token"] == tok.Access {
		t.Fatalf("refresh %d %v", status, m)
	}
	fresh := m["access_token"].(string)
	if status, b := generate(fresh); status != 200 {
		t.Errorf("refreshed token: %d %s", status, b)
	}
	if p := quotaAt(t, oa.URL(), fresh, tok.Project)["gemini-2.5-pro"]; p.RemainingAmount != "998" {
		t.Errorf("the refreshed token is another login: %+v", p)
	}
	if r, ok := oa.LastRefresh(); !ok || r.Provider != Google || r.ContentType != "application/x-www-form-urlencoded" ||
		!slices.Equal(r.Fields, []string{"client_id", "client_secret", "grant_type", "refresh_token"}) {
		t.Errorf("last refresh %+v", r)
	}
	// No rotation: the same refresh token works again.
	if status, _ := googleTokenCall(t, oa, refreshForm(tok.Refresh)); status != 200 {
		t.Errorf("second refresh: %d", status)
	}
	oa.ScriptRefresh(Step{Status: 503})
	if status, m := googleTokenCall(t, oa, refreshForm(tok.Refresh)); status != 503 || m["error"] != "server_error" {
		t.Errorf("scripted: %d %v", status, m)
	}
	oa.Revoke(tok.Refresh)
	status, m = googleTokenCall(t, oa, refreshForm(tok.Refresh))
	if status != 400 || m["error"] != "invalid_grant" || m["error_description"] != "Token has been expired or revoked." {
		t.Errorf("revoked: %d %v", status, m)
	}
	if status, m := googleTokenCall(t, oa, refreshForm("1//0never")); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("unknown: %d %v", status, m)
	}
	if st := oa.Stats(); st.Refreshes != 5 || st.Rotations != 2 || st.Revoked != 1 || st.Scripted != 1 {
		t.Errorf("stats %+v", st)
	}

	// ExpireAccess ends a Google token ahead of its time.
	oa.ExpireAccess(fresh)
	if status, _ := generate(fresh); status != 401 {
		t.Errorf("ExpireAccess: %d", status)
	}
}

// Two logins are two projects; each token is held to its own.
func TestGoogleLoginsKeepTheirProjects(t *testing.T) {
	oa, _, _ := startOAuth(t, OAuthOptions{})
	a := oa.GrantGoogle(GoogleLogin{Email: "a@example.com", Project: "project-a"})
	b := oa.GrantGoogle(GoogleLogin{Email: "b@example.com", Project: "project-b"})
	for _, tc := range []struct {
		access, project string
		status          int
	}{{a.Access, "project-a", 200}, {b.Access, "project-b", 200}, {a.Access, "project-b", 403}, {b.Access, "project-a", 403}} {
		req, _ := http.NewRequest("POST", oa.URL()+assistPath, strings.NewReader(assistBody(tc.project, "gemini-2.5-pro", geminiBodyHi)))
		req.Header.Set("Authorization", "Bearer "+tc.access)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s with %s: %d, want %d", tc.project, tc.access[:12], resp.StatusCode, tc.status)
		}
	}
}

func TestGoogleTokenInfoUserinfoRevoke(t *testing.T) {
	oa, _, clk := startOAuth(t, OAuthOptions{})
	tok := oa.GrantGoogle(GoogleLogin{Email: "someone@gmail.com"})
	clk.Advance(time.Minute)

	get := func(method, path, bearerTok, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, oa.URL()+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded;charset=UTF-8")
		if bearerTok != "" {
			req.Header.Set("Authorization", "Bearer "+bearerTok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	// google-auth-library's getTokenInfo: POST with the bearer.
	status, m := get("POST", "/tokeninfo", tok.Access, "")
	if status != 200 || m["expires_in"] != "3540" || !strings.Contains(m["scope"].(string), "cloud-platform") || m["email"] != "someone@gmail.com" || m["aud"] != GoogleClientID {
		t.Errorf("tokeninfo %d %v", status, m)
	}
	if status, m := get("GET", "/tokeninfo?access_token="+url.QueryEscape(tok.Access), "", ""); status != 200 || m["email"] != "someone@gmail.com" {
		t.Errorf("tokeninfo by query %d %v", status, m)
	}
	if status, m := get("POST", "/tokeninfo", "ya29.never", ""); status != 400 || m["error"] != "invalid_token" {
		t.Errorf("bad tokeninfo %d %v", status, m)
	}
	status, m = get("GET", "/oauth2/v2/userinfo", tok.Access, "")
	if status != 200 || m["email"] != "someone@gmail.com" || m["verified_email"] != true || m["id"] == "" {
		t.Errorf("userinfo %d %v", status, m)
	}
	if status, m := get("GET", "/oauth2/v2/userinfo", "ya29.never", ""); status != 401 || m["error"].(map[string]any)["status"] != "UNAUTHENTICATED" {
		t.Errorf("bad userinfo %d %v", status, m)
	}

	// Revoking the access token ends it; revoking the refresh token ends
	// the login's renewals.
	if status, _ := get("POST", "/revoke", "", "token="+url.QueryEscape(tok.Access)); status != 200 {
		t.Errorf("revoke access: %d", status)
	}
	if status, _ := get("POST", "/tokeninfo", tok.Access, ""); status != 400 {
		t.Errorf("revoked access still valid: %d", status)
	}
	if status, _ := get("POST", "/revoke?token="+url.QueryEscape(tok.Refresh), "", ""); status != 200 {
		t.Errorf("revoke refresh: %d", status)
	}
	if status, m := googleTokenCall(t, oa, refreshForm(tok.Refresh)); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("refresh after revoke: %d %v", status, m)
	}
	if status, m := get("POST", "/revoke", "", "token=nothing"); status != 400 || m["error"] != "invalid_token" {
		t.Errorf("revoke unknown: %d %v", status, m)
	}
}
