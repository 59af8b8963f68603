package oauth

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// keys lists a form's field names, sorted.
func keys(v url.Values) string {
	var ks []string
	for k := range v {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ",")
}

// The browser comes back to http://127.0.0.1:PORT/oauth2callback; the
// code is exchanged with a form carrying the client secret and the PKCE
// verifier, and the email is asked of userinfo, as Gemini CLI asks it.
func TestGoogleLoginThroughTheCallback(t *testing.T) {
	g := newFakeGoogle(t)
	g.idNoEmail = true // the email can only come from userinfo
	g.allowed = true   // Gemini CLI's client is allowed already: only prompt=consent brings a refresh token
	clk := clock.NewFake(epoch)
	ctx := guard(t)
	l, err := StartLogin(ctx, g.provider(), LoginOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ru, _ := url.Parse(l.RedirectURI())
	if !l.Listening() || ru.Hostname() != "127.0.0.1" || ru.Port() == "0" || ru.Path != "/oauth2callback" {
		t.Fatalf("callback %s", l.RedirectURI())
	}
	u, _ := url.Parse(l.URL())
	q := u.Query()
	if q.Get("access_type") != "offline" || q.Get("scope") != GoogleScope || q.Get("client_id") != GoogleClientID ||
		q.Get("redirect_uri") != l.RedirectURI() || q.Get("state") == "" || q.Get("code_challenge_method") != "S256" || q.Get("prompt") != "consent" {
		t.Fatalf("authorize URL %s", l.URL())
	}
	done := make(chan error, 1)
	var tok Tokens
	go func() {
		var err error
		tok, err = l.Wait(ctx)
		done <- err
	}()
	resp, err := http.Get(l.URL())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "Logged in to google") {
		t.Fatalf("browser saw %d %s", resp.StatusCode, page)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if tok.Access == "" || tok.Refresh == "" || tok.IDToken == "" || tok.Email != "ada.lovelace@gmail.com" || !tok.ExpiresAt.Equal(epoch.Add(3599*time.Second)) {
		t.Fatalf("tokens %+v", tok)
	}
	forms, ctypes, _ := g.stats()
	if len(forms) != 1 || ctypes[0] != "application/x-www-form-urlencoded" ||
		keys(forms[0]) != "client_id,client_secret,code,code_verifier,grant_type,redirect_uri" || forms[0].Get("redirect_uri") != l.RedirectURI() {
		t.Fatalf("exchange %v %v", forms, ctypes)
	}
	noSecret(t, "the browser page", string(page), tok.Access, tok.Refresh)
}

// Nothing listening (NO_BROWSER, a remote machine): the browser goes to
// Google's code page, as Gemini CLI sends it there, and the user pastes
// the code it shows.
func TestGoogleLoginByPaste(t *testing.T) {
	g := newFakeGoogle(t)
	ctx := guard(t)
	l, err := StartLogin(ctx, g.provider(), LoginOptions{Clock: clock.NewFake(epoch), NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.Listening() || l.RedirectURI() != GooglePasteRedirectURI {
		t.Fatalf("redirect %s", l.RedirectURI())
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(l.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(back.String(), GooglePasteRedirectURI+"?") {
		t.Fatalf("sent to %s", back)
	}
	tok, err := l.Complete(ctx, "  "+back.Query().Get("code")+"\n")
	if err != nil || tok.Refresh == "" || tok.Email != "ada.lovelace@gmail.com" {
		t.Fatalf("%+v %v", tok, err)
	}
	if forms, _, _ := g.stats(); forms[0].Get("redirect_uri") != GooglePasteRedirectURI {
		t.Fatalf("exchange %v", forms)
	}
}

// A code that brings no refresh token (no consent screen was shown) is
// refused: the login would end within the hour.
func TestGoogleLoginWithoutRefreshTokenFails(t *testing.T) {
	g := newFakeGoogle(t)
	g.allowed = true
	p := g.provider()
	delete(p.AuthorizeParams, "prompt")
	ctx := guard(t)
	l, err := StartLogin(ctx, p, LoginOptions{Clock: clock.NewFake(epoch), NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(l.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := l.Complete(ctx, resp.Header.Get("Location")); err == nil || !strings.Contains(err.Error(), "no refresh token") {
		t.Fatalf("%v", err)
	}
}

// userinfo failing leaves the login good, named by its id token's email.
func TestGoogleLoginWithoutUserinfo(t *testing.T) {
	g := newFakeGoogle(t)
	g.userinfoKO = true
	ctx := guard(t)
	l, err := StartLogin(ctx, g.provider(), LoginOptions{Clock: clock.NewFake(epoch), NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(l.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tok, err := l.Complete(ctx, resp.Header.Get("Location"))
	if err != nil || tok.Email != "ada.lovelace@gmail.com" || tok.Label(NameGoogle) != "ada.lovelace@gmail.com" {
		t.Fatalf("%+v %v", tok, err)
	}
}

// A refresh is one form (client id and secret, grant, refresh token; no
// scope) however many requests want it at once; Google's answer has no
// refresh token, and the old one is kept.
func TestGoogleRefresh(t *testing.T) {
	g := newFakeGoogle(t)
	clk := clock.NewFake(epoch)
	store, rec := newMemStore(), &recorder{}
	m := NewManager(ManagerOptions{Clock: clk, Store: store, Emit: rec})
	login := g.grant(clk.Now())
	login.Project = "wise-vortex-4k2q9"
	store.toks["g1"] = login
	p := g.provider()
	ctx := guard(t)
	clk.Advance(time.Hour)

	var wg sync.WaitGroup
	got := make([]Tokens, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Go(func() { got[i], errs[i] = m.Token(ctx, "g1", p, false) })
	}
	wg.Wait()
	forms, ctypes, n := g.stats()
	if n != 1 {
		t.Fatalf("%d refreshes for 8 callers", n)
	}
	for i := range got {
		if errs[i] != nil || got[i].Access != got[0].Access {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
	}
	if keys(forms[0]) != "client_id,client_secret,grant_type,refresh_token" || ctypes[0] != "application/x-www-form-urlencoded" || forms[0].Get("refresh_token") != login.Refresh {
		t.Fatalf("refresh form %v %s", forms[0], ctypes[0])
	}
	fresh := got[0]
	if fresh.Access == login.Access || fresh.Refresh != login.Refresh || fresh.Project != login.Project || !fresh.ExpiresAt.Equal(clk.Now().Add(3599*time.Second)) {
		t.Fatalf("refreshed %+v", fresh)
	}
	if s := store.get("g1"); s.Access != fresh.Access || s.Refresh != login.Refresh {
		t.Fatalf("stored %+v", s)
	}
	if len(rec.of("token_refreshed")) != 1 {
		t.Fatal(rec.json())
	}
	a := p.Auth(fresh)
	if a.Header.Get("Authorization") != "Bearer "+fresh.Access || a.BaseURL != "https://cloudcode-pa.example.test" || !a.CodeAssist || a.Project != "wise-vortex-4k2q9" {
		t.Fatalf("auth %+v", a)
	}
}

// invalid_grant (a revoked or expired refresh token) is a dead login the
// user must log in again for, reported as for the other providers.
func TestGoogleDeadRefreshTokenIsRelogin(t *testing.T) {
	g := newFakeGoogle(t)
	clk := clock.NewFake(epoch)
	store := newMemStore()
	m := NewManager(ManagerOptions{Clock: clk, Store: store})
	login := g.grant(clk.Now())
	store.toks["g1"] = login
	g.revoke(login.Refresh)
	clk.Advance(time.Hour)
	_, err := m.Token(guard(t), "g1", g.provider(), false)
	var te *TokenError
	if !isRelogin(err) || !errors.As(err, &te) || te.Status != 400 || te.Code != "invalid_grant" || !strings.Contains(err.Error(), "subpool login google") {
		t.Fatalf("%v", err)
	}
	noSecret(t, "the error", err.Error(), login.Refresh, login.Access, GoogleClientSecret)
}

// The project rides in the keychain secret with the rest of the login.
func TestTokensKeepTheProject(t *testing.T) {
	in := Tokens{Access: "ya29.a", Refresh: "1//0g", Email: "ada@gmail.com", Plan: "free-tier", Project: "wise-vortex-4k2q9", ExpiresAt: epoch}
	if in.Secret()["project"] != "wise-vortex-4k2q9" {
		t.Fatal(in.Secret())
	}
	out, err := FromSecret(in.Secret())
	if err != nil || out.Project != in.Project || out.Plan != in.Plan {
		t.Fatalf("%+v %v", out, err)
	}
	if m := in.merge(Tokens{Access: "ya29.b"}); m.Project != in.Project || m.Refresh != in.Refresh {
		t.Fatalf("merge lost the project or the refresh token: %+v", m)
	}
}
