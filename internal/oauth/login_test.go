package oauth

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// The browser comes back to the callback listener: the test client plays
// the browser by opening the login URL and following the redirect.
func TestLoginThroughTheCallback(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{Email: "ada@example.com", Plan: "pro"})
	for _, p := range []Provider{e.anth, e.oai} {
		t.Run(p.Name, func(t *testing.T) {
			ctx := guard(t)
			l, err := StartLogin(ctx, p, LoginOptions{Clock: e.clk})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if !l.Listening() || strings.Contains(l.RedirectURI(), ":0/") {
				t.Fatalf("no callback listener: %s", l.RedirectURI())
			}
			u, _ := url.Parse(l.URL())
			q := u.Query()
			if q.Get("code_challenge_method") != "S256" || q.Get("client_id") != p.ClientID || q.Get("redirect_uri") != l.RedirectURI() || q.Get("scope") != p.Scope {
				t.Fatalf("authorize URL: %s", l.URL())
			}
			type result struct {
				tok Tokens
				err error
			}
			done := make(chan result, 1)
			go func() {
				tok, err := l.Wait(ctx)
				done <- result{tok, err}
			}()
			resp, err := http.Get(l.URL())
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(page), "Logged in") {
				t.Fatalf("browser saw %d %s", resp.StatusCode, page)
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.tok.Access == "" || r.tok.Refresh == "" || !r.tok.ExpiresAt.Equal(e.clk.Now().Add(time.Hour)) || r.tok.Email != "ada@example.com" {
				t.Fatalf("tokens: %+v", r.tok)
			}
			if p.Name == NameOpenAI && (r.tok.AccountID == "" || r.tok.Plan != "pro" || r.tok.IDToken == "") {
				t.Fatalf("ChatGPT claims missing: %+v", r.tok)
			}
			noSecret(t, "the browser page", string(page), r.tok.Access, r.tok.Refresh)
		})
	}
}

// Headless: no listener; the user pastes the address the browser ended
// on, or Claude's code#state.
func TestLoginByPaste(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	browse := func(l *Login) *url.URL {
		resp, err := noRedirect.Get(l.URL())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		u, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, tc := range []struct {
		name  string
		p     Provider
		paste func(u *url.URL) string
	}{
		{"whole address", e.oai, func(u *url.URL) string { return "  " + u.String() + "\n" }},
		{"query only", e.oai, func(u *url.URL) string { return "?" + u.RawQuery }},
		{"code#state", e.anth, func(u *url.URL) string { return u.Query().Get("code") + "#" + u.Query().Get("state") }},
		{"bare code", e.anth, func(u *url.URL) string { return u.Query().Get("code") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := guard(t)
			l, err := StartLogin(ctx, tc.p, LoginOptions{Clock: e.clk, NoListen: true})
			if err != nil {
				t.Fatal(err)
			}
			if l.Listening() {
				t.Fatal("listening despite NoListen")
			}
			tok, err := l.Complete(ctx, tc.paste(browse(l)))
			if err != nil || tok.Access == "" {
				t.Fatalf("complete: %v", err)
			}
			again, err := l.Complete(ctx, "anything")
			if err != nil || again.Access != tok.Access {
				t.Fatalf("a finished login changed: %v", err)
			}
		})
	}

	// A code from another attempt, or a refused login, is an error that
	// lets the user try again.
	ctx := guard(t)
	l1, _ := StartLogin(ctx, e.anth, LoginOptions{Clock: e.clk, NoListen: true})
	l2, _ := StartLogin(ctx, e.anth, LoginOptions{Clock: e.clk, NoListen: true})
	u := browse(l1)
	if _, err := l2.Complete(ctx, u.String()); err == nil || !strings.Contains(err.Error(), "another login attempt") {
		t.Fatalf("foreign state: %v", err)
	}
	if _, err := l1.Complete(ctx, "http://localhost:54545/callback?error=access_denied&state=x"); err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("refused login: %v", err)
	}
	if _, err := l1.Complete(ctx, "not-the-code"); err == nil || !strings.Contains(err.Error(), "start the login again") {
		t.Fatalf("wrong code: %v", err)
	}
	if tok, err := l1.Complete(ctx, u.String()); err != nil || tok.Access == "" {
		t.Fatalf("retry after mistakes: %v", err)
	}
}
