package proxy

import (
	"context"
	"github.com/subpool/subpool/proxy/auth"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/pool"
)

const testClientKey = "sp-test-client-key"

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// recorder is an api.Emitter that keeps every event.
type recorder struct {
	mu sync.Mutex
	ev []api.Event
}

func (r *recorder) Emit(e api.Event) {
	r.mu.Lock()
	r.ev = append(r.ev, e)
	r.mu.Unlock()
}

func (r *recorder) of(types ...api.EventType) []api.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []api.Event
	for _, e := range r.ev {
		for _, t := range types {
			if e.Type == t {
				out = append(out, e)
			}
		}
	}
	return out
}

// keyAuth injects API keys the way the app's authenticator does.
type keyAuth struct {
	mu      sync.Mutex
	secrets map[string]string // credential id → key
	wire    map[string]string // provider → wire
	err     map[string]error  // credential id → error to return
	// projects marks Google logins (Code Assist): credential id → the
	// login's project; its secret is the access token.
	projects      map[string]string
	codeAssistURL string
}

func (k *keyAuth) Auth(ctx context.Context, cred pool.Credential, refresh bool) (auth.Auth, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.err[cred.ID]; err != nil {
		return auth.Auth{}, err
	}
	if refresh {
		return auth.Auth{}, auth.ErrNoRefresh
	}
	h := http.Header{}
	if p, ok := k.projects[cred.ID]; ok {
		h.Set("Authorization", "Bearer "+k.secrets[cred.ID])
		return auth.Auth{Header: h, BaseURL: k.codeAssistURL, CodeAssist: true, Project: p}, nil
	}
	switch k.wire[cred.Provider] {
	case "anthropic":
		h.Set("x-api-key", k.secrets[cred.ID])
	case "gemini":
		h.Set("x-goog-api-key", k.secrets[cred.ID])
	default:
		h.Set("Authorization", "Bearer "+k.secrets[cred.ID])
	}
	return auth.Auth{Header: h}, nil
}

// env is one proxy in front of one simulated upstream, both on real
// loopback listeners.
type env struct {
	t    *testing.T
	clk  clock.Clock
	fake *clock.Fake // nil with real time
	up   *sim.Server
	pool *pool.Pool
	rec  *recorder
	auth *keyAuth
	px   *Proxy
	srv  *httptest.Server
	// serving counts the requests px's handler is serving (waitFinished).
	serving chanGroup
}

type envOpt func(*Options, *sim.Options)

// newEnv builds an env on a fake clock unless realTime.
func newEnv(t *testing.T, realTime bool, opts ...envOpt) *env {
	t.Helper()
	e := &env{t: t, rec: &recorder{}}
	if realTime {
		e.clk = clock.Real{}
	} else {
		e.fake = clock.NewFake(epoch)
		e.clk = e.fake
	}
	so := sim.Options{Clock: e.clk}
	o := Options{Clock: e.clk, Events: e.rec, ClientKey: func() string { return testClientKey },
		SoleProviderMax: 2 * time.Minute, CapacityMax: 5 * time.Minute, Jitter: func() float64 { return 0.5 }}
	for _, f := range opts {
		f(&o, &so)
	}
	e.up = sim.New(so)
	if err := e.up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.up.Close)
	e.pool = pool.New(e.clk, pool.Config{}, e.rec)
	e.auth = &keyAuth{secrets: map[string]string{}, wire: map[string]string{}, err: map[string]error{}, projects: map[string]string{}, codeAssistURL: e.up.URL()}
	o.Pool, o.Auth = e.pool, e.auth
	if o.Providers == nil {
		o.Providers = map[string]*Provider{
			"anthropic": {Name: "anthropic", Wire: "anthropic", BaseURL: e.up.URL(), Profile: classify.Lookup("anthropic")},
			"openai":    {Name: "openai", Wire: "openai", BaseURL: e.up.URL(), Profile: classify.Lookup("openai")},
		}
	} else {
		for _, p := range o.Providers {
			if p.BaseURL == "" {
				p.BaseURL = e.up.URL()
			}
		}
	}
	for name, p := range o.Providers {
		e.auth.wire[name] = p.Wire
		e.pool.SetProvider(name, p.Profile.LimitScope)
	}
	e.px = New(o)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.serving.Add()
		defer e.serving.Done()
		e.px.ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// key adds an API-key credential whose secret is its id.
func (e *env) key(provider string, ids ...string) {
	for _, id := range ids {
		e.auth.secrets[id] = id
		e.pool.Add(pool.Credential{ID: id, Provider: provider, Label: id, Kind: api.KindAPIKey})
	}
}

const msgBody = `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`

// post sends a request with the client key and returns the response with
// its body read.
func (e *env) post(path, body string, hdr ...string) (*http.Response, string) {
	e.t.Helper()
	return e.postCtx(context.Background(), path, body, hdr...)
}

func (e *env) postCtx(ctx context.Context, path, body string, hdr ...string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", testClientKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err.Error()
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// async runs post in the background; the result arrives on the channel.
type result struct {
	resp *http.Response
	body string
}

func (e *env) async(ctx context.Context, path, body string, hdr ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		resp, b := e.postCtx(ctx, path, body, hdr...)
		ch <- result{resp, b}
	}()
	return ch
}

// pump lets the request's own waits pass on the fake clock until it is
// answered. It never advances past anything but a wait a goroutine is
// blocked on, so cooldown ends stay where the test puts them.
func (e *env) pump(ch <-chan result) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		select {
		case r := <-ch:
			return r
		default:
		}
		adv := make(chan error, 1)
		wctx, wcancel := context.WithCancel(ctx)
		go func() { adv <- e.fake.AdvanceToNextWaiter(wctx) }()
		select {
		case r := <-ch:
			wcancel()
			<-adv
			return r
		case err := <-adv:
			wcancel()
			if err != nil {
				e.t.Fatal("request never finished")
			}
		}
	}
}

// credsSeen lists the credential of each upstream call, in order.
func (e *env) credsSeen() []string {
	var out []string
	for _, r := range e.up.Requests() {
		out = append(out, r.Credential)
	}
	return out
}

func (e *env) state(id string) api.CredentialStatus {
	for _, c := range e.pool.Status("") {
		if c.ID == id {
			return c
		}
	}
	e.t.Fatalf("no credential %s", id)
	return api.CredentialStatus{}
}
