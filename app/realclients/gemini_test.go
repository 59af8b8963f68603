//go:build unix

package realclients

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// Gemini CLI (issue 26) in both of its modes: the Gemini API on a key,
// and "Login with Google" on Code Assist, each served by whichever Google
// credential the pool picks, in that credential's form.

// leaked reports the upstream requests that carried the client key
// anywhere: a header, the query or the body.
func (u *upstream) leaked(clientKey string) []sim.Record {
	var out []sim.Record
	for _, r := range u.Requests() {
		hit := strings.Contains(r.Query, clientKey) || strings.Contains(string(r.Body), clientKey)
		for _, vs := range r.Header {
			for _, v := range vs {
				hit = hit || strings.Contains(v, clientKey)
			}
		}
		if hit {
			out = append(out, r)
		}
	}
	return out
}

// googleLogin adds a Google login the sim knows through the admin API, as
// `subpool login google` ends up doing, and returns its tokens (their
// Project is the login's own).
func (s *served) googleLogin(label, email string) sim.OAuthTokens {
	s.t.Helper()
	g := s.up.oa.GrantGoogle(sim.GoogleLogin{Email: email})
	s.addOAuth("google", label, g)
	return g
}

// span is the time from the first model call the sim saw to the last:
// how long subpool took between them.
func (u *upstream) span() time.Duration {
	c := u.modelCalls()
	if len(c) < 2 {
		return 0
	}
	return c[len(c)-1].Time.Sub(c[0].Time)
}

func TestGeminiCLI(t *testing.T) {
	t.Run("gemini cli answers on a gemini key", testGeminiOnKey)
	t.Run("gemini cli login mode answers on a google login", testGeminiOnLogin)
	t.Run("gemini cli rotates past a 429 to the second key", testGeminiRotatesPast429)
	t.Run("gemini cli login mode gets an overload waited out", testGeminiOverloadWaitedOut)
}

// a. API-key mode on a Gemini key: the key goes upstream as
// x-goog-api-key, the client key never does.
func testGeminiOnKey(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	k := fakeKey("google", "base-key")
	up.AddGoogleKey(k)
	s := serve(t, up, "", apiKey{"google", "main", k})
	_, clientKey := s.env("gemini-cli")
	start := time.Now()
	a, r := s.gemini(t, 60*time.Second, geminiAPI, "say hi")
	took := time.Since(start)
	calls := up.modelCalls()
	t.Logf("gemini -p ended after %s (the client is killed at 60 s); it counted %d requests; upstream:%s", took.Round(time.Millisecond), a.requests(), up.describe())
	if r.err != nil || !strings.Contains(a.Response, "pong-from-sim") {
		t.Fatalf("no answer: %s\nupstream:%s", r, up.describe())
	}
	if len(calls) != 1 || calls[0].Status != 200 || !strings.HasPrefix(calls[0].Path, "/v1beta/models/gemini-2.5-flash:") {
		t.Fatalf("want one Gemini API call for gemini-2.5-flash, answered 200:%s", up.describe())
	}
	if got := calls[0].Header.Get("X-Goog-Api-Key"); got != k {
		t.Errorf("upstream x-goog-api-key = %q, want the pool's key", short(got))
	}
	if l := up.leaked(clientKey); len(l) > 0 {
		t.Errorf("the client key reached the upstream on %d requests, first %s?%s", len(l), l[0].Path, l[0].Query)
	}
}

// b. "Login with Google" mode on a Google login: Code Assist sees the
// login's own token and project on every call that names one.
func testGeminiOnLogin(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	s := serve(t, up, "")
	g := s.googleLogin("work", "person@example.com")
	_, clientKey := s.env("gemini-cli")
	start := time.Now()
	a, r := s.gemini(t, 60*time.Second, geminiLogin, "say hi")
	took := time.Since(start)
	calls := up.modelCalls()
	var paths []string
	for _, rec := range up.Requests() {
		paths = append(paths, rec.Path)
	}
	t.Logf("gemini -p ended after %s (the client is killed at 60 s); it counted %d requests; upstream calls %s; model calls:%s", took.Round(time.Millisecond), a.requests(), strings.Join(paths, " "), up.describe())
	if r.err != nil || !strings.Contains(a.Response, "pong-from-sim") {
		t.Fatalf("no answer: %s\nupstream:%s", r, up.describe())
	}
	if len(calls) != 1 || calls[0].Status != 200 || !strings.HasPrefix(calls[0].Path, "/v1internal:") {
		t.Fatalf("want one Code Assist call, answered 200:%s", up.describe())
	}
	if calls[0].Credential != g.Access || requestProject(calls[0]) != g.Project || g.Project == "" {
		t.Errorf("Code Assist saw %s with project %q, want the login's token and project %q", short(calls[0].Credential), requestProject(calls[0]), g.Project)
	}
	for _, rec := range up.Requests() {
		if p := requestProject(rec); p != "" && p != g.Project {
			t.Errorf("%s named project %q, not the login's %q", rec.Path, p, g.Project)
		}
	}
	if l := up.leaked(clientKey); len(l) > 0 {
		t.Errorf("the client key reached the upstream on %d requests, first %s", len(l), l[0].Path)
	}
}

// c. The first key is rate limited for 30 s, the second is ready: the
// answer comes at once from the second, and Gemini CLI (which would
// wait 5 s before a retry of its own) asks once.
func testGeminiRotatesPast429(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	a1, a2 := fakeKey("google", "rot-a"), fakeKey("google", "rot-b")
	up.AddGoogleKey(a1)
	up.AddGoogleKey(a2)
	up.Script(a1, sim.RateLimited("google", 30*time.Second))
	s := serve(t, up, "", apiKey{"google", "first", a1}, apiKey{"google", "second", a2})
	start := time.Now()
	a, r := s.gemini(t, 60*time.Second, geminiAPI, "say hi")
	took := time.Since(start)
	c1, _ := up.callsBy(a1)
	c2, ok2 := up.callsBy(a2)
	asked, attempts := s.clientRequests()
	t.Logf("answer in %s (the client is killed at 60 s); upstream calls: first key %d (429), second key %d (%d answered 200), %s apart; requests Gemini CLI made to subpool %d (it counted %d), attempts %d", took.Round(time.Millisecond), c1, c2, ok2, up.span().Round(time.Millisecond), asked, a.requests(), attempts)
	if r.err != nil || !strings.Contains(a.Response, "pong-from-sim") {
		t.Fatalf("no answer: %s\nupstream:%s", r, up.describe())
	}
	if c1 != 1 || c2 != 1 || ok2 != 1 || len(up.modelCalls()) != 2 {
		t.Errorf("want one 429 on the first key and the answer from the second:%s", up.describe())
	}
	if asked != 1 || a.requests() != 1 || attempts != 2 {
		t.Errorf("Gemini CLI asked %d times (it counted %d) for %d attempts: want one request, two attempts", asked, a.requests(), attempts)
	}
}

// d. The model is overloaded twice on the only credential, a Google
// login added without its project (the daemon finds it): subpool
// waits it out and Gemini CLI gets its answer on its first request.
func testGeminiOverloadWaitedOut(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	access := "ya29.subpool-realclients-test-overload"
	project := up.AddGoogleLogin(access, sim.GoogleLogin{Email: "person@example.com"})
	up.Script(access, sim.GoogleOverloaded(), sim.GoogleOverloaded())
	s := serve(t, up, "")
	s.addOAuth("google", "work", sim.OAuthTokens{Access: access, Email: "person@example.com", ExpiresAt: time.Now().Add(time.Hour)})
	start := time.Now()
	a, r := s.gemini(t, 60*time.Second, geminiLogin, "say hi")
	took := time.Since(start)
	calls, ok := up.callsBy(access)
	asked, attempts := s.clientRequests()
	t.Logf("answer in %s (the client is killed at 60 s); upstream model calls %d (2×503, then 200: want 3), %d answered, the first to the last %s; requests Gemini CLI made to subpool %d (it counted %d), attempts %d", took.Round(time.Millisecond), calls, ok, up.span().Round(time.Millisecond), asked, a.requests(), attempts)
	if r.err != nil || !strings.Contains(a.Response, "pong-from-sim") {
		t.Fatalf("no answer: %s\nupstream:%s", r, up.describe())
	}
	if calls != 3 || ok != 1 {
		t.Errorf("want 2 overloads and one answer upstream on the one login:%s", up.describe())
	}
	if asked != 1 || a.requests() != 1 || attempts != 3 {
		t.Errorf("Gemini CLI asked %d times (it counted %d) for %d attempts: want one request, the three attempts subpool made for it", asked, a.requests(), attempts)
	}
	for _, rec := range up.modelCalls() {
		if requestProject(rec) != project {
			t.Errorf("%s named project %q, want the login's %q", rec.Path, requestProject(rec), project)
		}
	}
}
