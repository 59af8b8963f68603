package daemon

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/egress/egresstest"
	"github.com/subpool/subpool/internal/freeport"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// egressHome is a home whose upstreams are all "sim.invalid" (at the
// sim's port, which the proxies ignore), with extra appended.
func egressHome(t *testing.T, upstream, extra string) string {
	t.Helper()
	home := t.TempDir()
	_, port, _ := net.SplitHostPort(hostOf(upstream))
	up := "http://sim.invalid:" + port
	cfg := fmt.Sprintf(`listen = %q
[keychain]
backend = "file"
[providers.anthropic]
base_url = %q
token_url = %q
[providers.openai]
base_url = %q
chatgpt_base_url = %q
token_url = %q
[wait]
sole_provider_max = "0s"
[usage]
poll = "30s"
%s`, freeport.Addr(t), up, up+"/v1/oauth/token", up, up+"/backend-api/codex", up+"/oauth/token", extra)
	if err := os.WriteFile(filepath.Join(home, config.FileName), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// addInPlace adds credentials to a home no proxy serves, as the CLI does.
func addInPlace(t *testing.T, home string, reqs ...api.AddCredential) []string {
	t.Helper()
	cfg, err := config.Read(filepath.Join(home, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(home, cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var ids []string
	for _, r := range reqs {
		id, err := d.AddCredential(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func hostOf(u string) string { return strings.TrimPrefix(u, "http://") }

// Every outbound call leaves through the egress proxy: [network] proxy
// (with its user:password) carries a ChatGPT login's refresh, its usage
// poll and its request; a key's own proxy carries that key's request
// instead. The upstream's name resolves nowhere, so nothing went direct.
// The proxies' passwords appear in no status, event or log line.
func TestEgressProxyCarriesRequestsRefreshesAndPolls(t *testing.T) {
	up, oa := startOAuthSim(t, sim.OAuthOptions{})
	global := egresstest.Start(t, hostOf(oa.URL()))
	own := egresstest.Start(t, hostOf(oa.URL()))
	home := egressHome(t, oa.URL(), networkProxy("http://net:hunter2@"+global.Addr))

	expired := func(provider string) map[string]string {
		tok := oa.Grant(provider)
		return oauth.Tokens{Access: tok.Access, Refresh: tok.Refresh, ExpiresAt: time.Now().Add(-time.Minute)}.Secret()
	}
	ownProxy := "http://own:swordfish@" + own.Addr
	ids := addInPlace(t, home,
		api.AddCredential{Provider: "openai", Label: "chatgpt", Kind: api.KindOAuth, Secret: expired(sim.OpenAI)},
		api.AddCredential{Provider: "anthropic", Label: "key", Kind: api.KindAPIKey, Secret: map[string]string{"key": "sk-ant-1"}, Proxy: ownProxy},
		api.AddCredential{Provider: "anthropic", Label: "claude", Kind: api.KindOAuth, Secret: expired(sim.Anthropic), Proxy: ownProxy})
	logs := &logBuf{}
	s := startHome(t, home, logs)

	// At start the poller asks the login's usage; its expired token is
	// refreshed first, through the same proxy.
	global.WaitCount(t, "GET /backend-api/wham/usage", 1)
	if n := global.Count("POST /oauth/token"); n != 1 {
		t.Fatalf("%d refreshes through [network] proxy, want 1; it saw: %s", n, global.Log())
	}
	// The Claude login has a proxy of its own: its refresh and poll too.
	own.WaitCount(t, "GET /api/oauth/usage", 1)
	if n, m := own.Count("POST /v1/oauth/token"), global.Count("POST /v1/oauth/token"); n != 1 || m != 0 {
		t.Fatalf("Claude login's refresh: %d through its own proxy, %d through [network] proxy; want 1 and 0", n, m)
	}
	if resp, body := proxyPost(t, s, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":false}`); resp.StatusCode != 200 {
		t.Fatalf("ChatGPT login: %d %s", resp.StatusCode, body)
	}
	if resp, body := proxyPost(t, s, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
		t.Fatalf("key with its own proxy: %d %s", resp.StatusCode, body)
	}
	if n := global.Count("POST /backend-api/codex/responses"); n != 1 {
		t.Fatalf("login's request through [network] proxy: %d; it saw: %s", n, global.Log())
	}
	if n, m := own.Count("POST /v1/messages"), global.Count("POST /v1/messages"); n != 1 || m != 0 {
		t.Fatalf("key's request: %d through its own proxy, %d through [network] proxy; want 1 and 0", n, m)
	}
	if got := up.Calls("sk-ant-1"); got != 1 {
		t.Fatalf("the sim saw the key %d times, want 1", got)
	}
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("net:hunter2"))
	seen, auths := global.Auths()
	for i, a := range auths {
		if a != wantAuth {
			t.Errorf("%s came without the proxy's credentials (%q)", seen[i], a)
		}
	}

	st, _ := s.Status(context.Background())
	b, _ := json.Marshal(st)
	evs, _ := s.Hub().Since(0)
	eb, _ := json.Marshal(evs)
	for _, leak := range []string{"hunter2", "swordfish"} {
		if strings.Contains(string(b)+string(eb)+logs.String(), leak) {
			t.Fatalf("a proxy's password %q shows in status, events or logs", leak)
		}
	}
	for _, p := range st.Providers {
		for _, c := range p.Credentials {
			want := ""
			if c.ID == ids[1] || c.ID == ids[2] {
				want = "http://" + own.Addr
			}
			if c.Proxy != want {
				t.Errorf("%s shows proxy %q, want %q", c.ID, c.Proxy, want)
			}
		}
	}
}

func networkProxy(u string) string { return fmt.Sprintf("[network]\nproxy = %q\n", u) }

// A region refusal is answered once by the upstream: the two keys behind
// the refused egress are parked at the first, and that request and the
// two after it get subpool's answer naming [network] proxy, marked not
// worth retrying. A new [network] proxy (a reload) unparks them, and the
// next request passes through it.
func TestRegionRefusalParksTheEgressOnce(t *testing.T) {
	up := startSim(t, sim.Options{})
	refused := egresstest.Start(t, hostOf(up.URL()))
	elsewhere := egresstest.Start(t, hostOf(up.URL()))
	home := egressHome(t, up.URL(), networkProxy("http://"+refused.Addr))
	addInPlace(t, home,
		api.AddCredential{Provider: "openai", Label: "one", Kind: api.KindAPIKey, Secret: map[string]string{"key": "sk-1"}},
		api.AddCredential{Provider: "openai", Label: "two", Kind: api.KindAPIKey, Secret: map[string]string{"key": "sk-2"}})
	region := sim.Step{Status: 403, Body: `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`}
	up.Always("sk-1", region)
	up.Always("sk-2", region)
	s := startHome(t, home, &logBuf{})

	const chat = `{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`
	for i := range 3 {
		resp, body := proxyPost(t, s, "/v1/chat/completions", chat)
		if resp.StatusCode < 400 || resp.Header.Get("X-Should-Retry") != "false" || !strings.Contains(body, "[network] proxy") {
			t.Fatalf("request %d: %d x-should-retry %q %s; want subpool's refusal naming [network] proxy, not to be retried",
				i+1, resp.StatusCode, resp.Header.Get("X-Should-Retry"), body)
		}
	}
	if n := up.Calls("sk-1") + up.Calls("sk-2"); n != 1 {
		t.Fatalf("%d upstream calls for 3 requests, want 1", n)
	}
	evs, _ := s.Hub().Since(0)
	parked := 0
	for _, e := range evs {
		if e.Type == api.EventParked && e.Kind == api.ParkRegion {
			parked++
		}
	}
	if parked != 2 {
		t.Fatalf("%d region parks, want both keys parked once", parked)
	}

	up.Clear("sk-1")
	up.Clear("sk-2")
	cfg := filepath.Join(home, config.FileName)
	b, _ := os.ReadFile(cfg)
	moved := strings.Replace(string(b), refused.Addr, elsewhere.Addr, 1)
	if err := os.WriteFile(cfg, []byte(moved), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Reload(context.Background()); err != nil || !slices.Contains(r.Live, "network") {
		t.Fatalf("reload: %+v %v, want network applied live", r, err)
	}
	if resp, body := proxyPost(t, s, "/v1/chat/completions", chat); resp.StatusCode != 200 {
		t.Fatalf("after a new [network] proxy: %d %s", resp.StatusCode, body)
	}
	if n := elsewhere.Count("POST /v1/chat/completions"); n != 1 {
		t.Fatalf("%d requests through the new proxy, want 1; it saw: %s", n, elsewhere.Log())
	}
}

// add-key --proxy is checked on the way in, its password never echoed;
// a login parked for its region comes back when logged in again with
// another --proxy, which replaces the old one.
func TestCredentialProxyIsCheckedAndReplacedByALogin(t *testing.T) {
	keys := keychain.NewMemory()
	c := newCore(config.Default(), clock.NewFake(time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)),
		func() (keychain.Store, error) { return keys, nil }, noFiles{}, api.Discard, t.Logf)
	ctx := context.Background()
	_, err := c.AddCredential(ctx, api.AddCredential{Provider: "openai", Label: "k", Kind: api.KindAPIKey,
		Secret: map[string]string{"key": "sk-1"}, Proxy: "ftp://me:s3cret@10.0.0.1:21"})
	if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "--proxy") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("bad --proxy: %v", err)
	}
	login := func(proxy string) string {
		id, err := c.AddCredential(ctx, api.AddCredential{Provider: "openai", Label: "me@example.com", Kind: api.KindOAuth,
			Secret: map[string]string{"access_token": "a", "refresh_token": "r"}, Proxy: proxy})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	id := login("http://me:s3cret@10.0.0.1:3128")
	if got := c.proxies.get(id); got == nil || got.User.Username() != "me" {
		t.Fatalf("the login's proxy for its calls: %v", got)
	}
	c.pool.Park(id, "", api.ParkRegion, "403 unsupported_country_region_territory")
	if again := login("socks5://10.0.0.2:1080"); again != id {
		t.Fatalf("the login with another proxy made %s, want %s back", again, id)
	}
	st := c.Status(ctx).Providers[1].Credentials
	if len(st) != 1 || st[0].State != api.StateReady || st[0].Proxy != "socks5://10.0.0.2:1080" {
		t.Fatalf("after the new proxy: %+v", st)
	}
	if rec, _ := c.record(id); rec.Proxy != "socks5://10.0.0.2:1080" {
		t.Fatalf("record keeps %q", rec.Proxy)
	}
}

// OpenAI's token endpoint refuses a refused location as its API does: the
// login's refresh parks it (and any credential behind the same egress)
// for its region, once, and requests then get subpool's answer without
// asking the endpoint again.
func TestRefreshRefusedForItsRegionParksTheLogin(t *testing.T) {
	_, oa := startOAuthSim(t, sim.OAuthOptions{})
	oa.ScriptRefresh(sim.Step{Status: 403, Times: 5,
		Body: `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`})
	home := oauthHome(t, oa)
	tok := oa.Grant(sim.OpenAI)
	addInPlace(t, home, api.AddCredential{Provider: "openai", Label: "chatgpt", Kind: api.KindOAuth,
		Secret: oauth.Tokens{Access: tok.Access, Refresh: tok.Refresh, ExpiresAt: time.Now().Add(-time.Minute)}.Secret()})
	s := startHome(t, home, &logBuf{})
	resp, body := proxyPost(t, s, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":false}`)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Should-Retry") != "false" || !strings.Contains(body, "[network] proxy") {
		t.Fatalf("%d x-should-retry %q %s; want subpool's refusal naming [network] proxy", resp.StatusCode, resp.Header.Get("X-Should-Retry"), body)
	}
	st, _ := s.Status(context.Background())
	if c := st.Providers[1].Credentials[0]; c.State != api.StateParked || len(c.Parks) != 1 || c.Parks[0].Kind != api.ParkRegion {
		t.Fatalf("the login after its refusal: %+v, want parked for its region", c)
	}
	proxyPost(t, s, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":false}`)
	if n := oa.Stats().Refreshes; n != 1 {
		t.Fatalf("%d refreshes, want 1: the park answers the rest", n)
	}
}
