package oauth

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/pool"
)

// These tests drive a real proxy (as proxy/harness_test.go builds one) in
// front of the simulated upstream, with the Manager as the authenticator
// of its oauth credentials.

const clientKey = "sp-test-client-key"

// auth is the app's authenticator in miniature: oauth credentials through
// the Manager, API keys (whose secret is their id) as headers.
type testAuth struct {
	m     *Manager
	provs map[string]Provider
}

func (a *testAuth) Auth(ctx context.Context, cred pool.Credential, refresh bool) (auth.Auth, error) {
	if cred.Kind == api.KindOAuth {
		return a.m.Auth(ctx, cred.ID, a.provs[cred.Provider], refresh)
	}
	if refresh {
		return auth.Auth{}, auth.ErrNoRefresh
	}
	h := http.Header{}
	if cred.Provider == "anthropic" {
		h.Set("x-api-key", cred.ID)
	} else {
		h.Set("Authorization", "Bearer "+cred.ID)
	}
	return auth.Auth{Header: h}, nil
}

type proxyEnv struct {
	*env
	pool *pool.Pool
	srv  *httptest.Server
}

func newProxyEnv(t *testing.T, oo sim.OAuthOptions) *proxyEnv {
	t.Helper()
	e := &proxyEnv{env: newEnv(t, oo)}
	e.pool = pool.New(e.clk, pool.Config{}, e.rec)
	e.m.o.OnExpiry = e.pool.SetExpiry
	provs := map[string]*proxy.Provider{
		"anthropic": {Name: "anthropic", Wire: "anthropic", BaseURL: e.oa.URL(), Profile: classify.Lookup("anthropic")},
		"openai":    {Name: "openai", Wire: "openai", BaseURL: e.oa.URL(), Profile: classify.Lookup("openai")},
	}
	for name := range provs {
		e.pool.SetProvider(name, pool.LimitCredential)
	}
	px := proxy.New(proxy.Options{
		Clock: e.clk, Pool: e.pool, Events: e.rec, Providers: provs,
		Auth:      &testAuth{m: e.m, provs: map[string]Provider{"anthropic": e.anth, "openai": e.oai}},
		ClientKey: func() string { return clientKey }, SoleProviderMax: 0,
	})
	e.srv = httptest.NewServer(px)
	t.Cleanup(e.srv.Close)
	return e
}

// oauthCred adds a subscription login to the pool and the store.
func (e *proxyEnv) oauthCred(id, provider string) sim.OAuthTokens {
	g := e.login(id, provider)
	e.pool.Add(pool.Credential{ID: id, Provider: provider, Label: id, Kind: api.KindOAuth})
	return g
}

func (e *proxyEnv) keyCred(id, provider string) {
	e.pool.Add(pool.Credential{ID: id, Provider: provider, Label: id, Kind: api.KindAPIKey})
}

type answer struct {
	status int
	cred   string
	body   string
}

func (e *proxyEnv) send(path, body string, hdr ...string) answer {
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", clientKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	// The requests play Claude Code (and Codex), the tools a subscription
	// serves by default.
	req.Header.Set("User-Agent", "claude-cli/2.1.197 (external, cli)")
	if strings.Contains(path, "/responses") || strings.Contains(path, "/chat/") {
		req.Header.Set("User-Agent", "codex_cli_rs/0.171.0")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{body: err.Error()}
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return answer{resp.StatusCode, resp.Header.Get("x-subpool-credential"), string(b)}
}

const (
	claudeBody = `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	codexBody  = `{"model":"gpt-5","input":"hi"}`
)

// What goes upstream: Claude gets the bearer token and the OAuth beta
// next to the client's own; ChatGPT goes to the Codex backend with the
// account id; an API key in the same openai pool goes to the API. Nothing
// of another client's identity is added.
func TestSubscriptionRequestsCarryWhatTheUpstreamNeeds(t *testing.T) {
	e := newProxyEnv(t, sim.OAuthOptions{AccountID: "acct-sim-1"})
	claude := e.oauthCred("claude-1", "anthropic")
	chatgpt := e.oauthCred("chatgpt-1", "openai")
	e.keyCred("sk-openai-key", "openai")

	a := e.send("/v1/messages?beta=true", claudeBody, "anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14")
	if a.status != 200 || a.cred != "claude-1" {
		t.Fatalf("claude: %+v", a)
	}
	for i := 0; i < 2; i++ {
		if a := e.send("/v1/responses", codexBody); a.status != 200 {
			t.Fatalf("openai: %+v", a)
		}
	}
	recs := e.up.Requests()
	if len(recs) != 3 {
		t.Fatalf("%d upstream requests", len(recs))
	}
	c := recs[0]
	if c.Path != "/v1/messages" || c.Query != "beta=true" || c.Header.Get("Authorization") != "Bearer "+claude.Access || c.Header.Get("x-api-key") != "" {
		t.Fatalf("claude upstream: %s %v", c.Path, c.Header)
	}
	if got := c.Header.Get("anthropic-beta"); got != "claude-code-20250219,interleaved-thinking-2025-05-14,"+OAuthBeta {
		t.Fatalf("anthropic-beta %q", got)
	}
	seen := map[string]sim.Record{}
	for _, r := range recs[1:] {
		seen[r.Credential] = r
	}
	cg, ok := seen[chatgpt.Access]
	if !ok || cg.Path != "/backend-api/codex/responses" || cg.Header.Get("chatgpt-account-id") != "acct-sim-1" {
		t.Fatalf("chatgpt upstream: %+v", cg)
	}
	key, ok := seen["sk-openai-key"]
	if !ok || key.Path != "/v1/responses" || key.Header.Get("chatgpt-account-id") != "" {
		t.Fatalf("api key upstream: %+v", key)
	}
	// The client's own user-agent passes through; subpool adds no
	// originator and changes no user-agent to another client's.
	if ua := recs[0].Header.Get("User-Agent"); ua != "claude-cli/2.1.197 (external, cli)" {
		t.Fatalf("claude upstream user-agent %q, want the client's own", ua)
	}
	for _, r := range recs {
		if r.Header.Get("originator") != "" || (r.Path != "/v1/messages" && strings.Contains(strings.ToLower(r.Header.Get("User-Agent")), "claude")) {
			t.Fatalf("cloaking headers sent: %v", r.Header)
		}
	}
}

// 100 requests at once while the access token expires: one refresh, and
// every client gets its answer. Either subpool sees the expiry coming,
// or the upstream refuses the token first and every refused request asks
// for a refresh.
func TestHundredRequestsOneRefresh(t *testing.T) {
	for _, tc := range []struct {
		name   string
		expire func(e *proxyEnv, g sim.OAuthTokens)
	}{
		{"expiry passes", func(e *proxyEnv, _ sim.OAuthTokens) { e.clk.Advance(61 * time.Minute) }},
		{"upstream refuses the token early", func(e *proxyEnv, g sim.OAuthTokens) { e.oa.ExpireAccess(g.Access) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newProxyEnv(t, sim.OAuthOptions{})
			g := e.oauthCred("claude-1", "anthropic")
			if a := e.send("/v1/messages", claudeBody); a.status != 200 {
				t.Fatalf("warm-up: %+v", a)
			}
			tc.expire(e, g)
			var wg sync.WaitGroup
			answers := make([]answer, 100)
			for i := range answers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					answers[i] = e.send("/v1/messages", claudeBody)
				}()
			}
			wg.Wait()
			for i, a := range answers {
				if a.status != 200 {
					t.Fatalf("request %d: %d %s", i, a.status, a.body)
				}
			}
			if st := e.oa.Stats(); st.Refreshes != 1 {
				t.Fatalf("refresh calls: %+v", st)
			}
			refused := 0
			for _, r := range e.up.Requests() {
				if r.Status == 401 {
					refused++
				}
			}
			t.Logf("upstream refused the old token %d times; clients saw none", refused)
			if c := e.pool.Status("anthropic")[0]; c.State != api.StateReady || c.ExpiresAt == nil || !c.ExpiresAt.Equal(e.clk.Now().Add(time.Hour)) {
				t.Fatalf("status after refresh: %+v", c)
			}
		})
	}
}

// A dead refresh token parks its credential with relogin_required, and the
// request is served by another credential; the endpoint is not asked
// again.
func TestDeadLoginIsParkedAndTheRequestServedElsewhere(t *testing.T) {
	e := newProxyEnv(t, sim.OAuthOptions{})
	g := e.oauthCred("claude-dead", "anthropic")
	e.keyCred("sk-ant-spare", "anthropic")
	e.oa.Revoke(g.Refresh)
	e.clk.Advance(2 * time.Hour)
	a := e.send("/v1/messages", claudeBody)
	if a.status != 200 || a.cred != "sk-ant-spare" {
		t.Fatalf("%+v", a)
	}
	ev := e.rec.of(api.EventReloginRequired)
	if len(ev) != 1 || ev[0].CredentialID != "claude-dead" || !strings.Contains(ev[0].Reason, "invalid_grant") {
		t.Fatalf("relogin_required: %+v", ev)
	}
	st := e.pool.Status("anthropic")
	if st[0].State != api.StateParked || len(st[0].Parks) != 1 || st[0].Parks[0].Kind != api.ParkRelogin {
		t.Fatalf("not parked: %+v", st[0])
	}
	for range 3 {
		if a := e.send("/v1/messages", claudeBody); a.status != 200 || a.cred != "sk-ant-spare" {
			t.Fatalf("%+v", a)
		}
	}
	if s := e.oa.Stats(); s.Refreshes != 1 {
		t.Fatalf("%+v", s)
	}
	noSecret(t, "events", e.rec.json(), g.Access, g.Refresh)
}

// The refresh endpoint answering 429: the credential sits out the request
// (another serves it), is not parked, and once the backoff has passed a
// refresh succeeds and it serves again.
func TestRefreshRateLimitIsNotARelogin(t *testing.T) {
	e := newProxyEnv(t, sim.OAuthOptions{})
	e.oauthCred("claude-sub", "anthropic")
	e.keyCred("sk-ant-spare", "anthropic")
	e.clk.Advance(2 * time.Hour)
	e.oa.ScriptRefresh(sim.Step{Status: 429, Header: map[string]string{"Retry-After": "60"}})
	for i := range 2 {
		a := e.send("/v1/messages", claudeBody)
		if a.status != 200 || a.cred != "sk-ant-spare" {
			t.Fatalf("request %d: %+v", i, a)
		}
	}
	if s := e.oa.Stats(); s.Refreshes != 1 {
		t.Fatalf("asked the endpoint during backoff: %+v", s)
	}
	c := e.pool.Status("anthropic")[0]
	if c.State != api.StateReady || len(c.Parks) != 0 || !strings.Contains(c.Reason, "429") {
		t.Fatalf("status: %+v", c)
	}
	if n := len(e.rec.of(api.EventReloginRequired)); n != 0 {
		t.Fatalf("%d relogin_required events", n)
	}
	e.clk.Advance(61 * time.Second)
	served := map[string]bool{}
	for range 2 {
		a := e.send("/v1/messages", claudeBody)
		if a.status != 200 {
			t.Fatalf("%+v", a)
		}
		served[a.cred] = true
	}
	if !served["claude-sub"] {
		t.Fatalf("the subscription never served again: %v", served)
	}
	if s := e.oa.Stats(); s.Refreshes != 2 || s.Rotations != 1 {
		t.Fatalf("%+v", s)
	}
}

// Subscription usage reported in headers reaches status, and selection
// moves to the login with more headroom.
func TestUtilizationSteersSubscriptions(t *testing.T) {
	e := newProxyEnv(t, sim.OAuthOptions{})
	busy := e.oauthCred("chatgpt-busy", "openai")
	idle := e.oauthCred("chatgpt-idle", "openai")
	e.up.SetUtilization(busy.Access, 0.9, 0.4)
	e.up.SetUtilization(idle.Access, 0.1, 0.2)
	for range 2 { // one each while nothing is known
		if a := e.send("/v1/responses", codexBody); a.status != 200 {
			t.Fatalf("%+v", a)
		}
	}
	for i := range 6 {
		if a := e.send("/v1/responses", codexBody); a.status != 200 || a.cred != "chatgpt-idle" {
			t.Fatalf("request %d went to %s", i, a.cred)
		}
	}
	for _, c := range e.pool.Status("openai") {
		want := map[string]float64{"chatgpt-busy": 0.9, "chatgpt-idle": 0.2}[c.ID]
		if c.Usage == nil || c.Usage.FiveHour == nil || c.Usage.SevenDay == nil || math.Abs(1-c.Usage.Headroom()-want) > 1e-9 {
			t.Fatalf("%s utilization: %+v", c.ID, c.Usage)
		}
	}
}
