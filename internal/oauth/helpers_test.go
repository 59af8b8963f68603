package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/clock"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// memStore is a TokenStore in memory that keeps every save, and can be
// told to fail.
type memStore struct {
	mu    sync.Mutex
	toks  map[string]Tokens
	saves []Tokens
	fail  error
}

func newMemStore() *memStore { return &memStore{toks: map[string]Tokens{}} }

func (s *memStore) Load(id string) (Tokens, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.toks[id]
	if !ok {
		return Tokens{}, fmt.Errorf("%w: no login for %s", auth.ErrRelogin, id)
	}
	return t, nil
}

func (s *memStore) Save(id string, t Tokens) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.toks[id] = t
	s.saves = append(s.saves, t)
	return nil
}

func (s *memStore) get(id string) Tokens {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.toks[id]
}

func (s *memStore) setFail(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

// recorder keeps events.
type recorder struct {
	mu sync.Mutex
	ev []api.Event
}

func (r *recorder) Emit(e api.Event) {
	r.mu.Lock()
	r.ev = append(r.ev, e)
	r.mu.Unlock()
}

func (r *recorder) of(t api.EventType) []api.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []api.Event
	for _, e := range r.ev {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) json() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, _ := json.Marshal(r.ev)
	return string(b)
}

// env is a Manager against a simulated upstream with its OAuth server,
// all on one fake clock.
type env struct {
	t     *testing.T
	clk   *clock.Fake
	up    *sim.Server
	oa    *sim.OAuthServer
	store *memStore
	rec   *recorder
	m     *Manager
	logs  *logBuf
	anth  Provider
	oai   Provider
}

type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) logf(format string, a ...any) {
	l.mu.Lock()
	fmt.Fprintf(&l.b, format+"\n", a...)
	l.mu.Unlock()
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newEnv(t *testing.T, oo sim.OAuthOptions) *env {
	t.Helper()
	e := &env{t: t, clk: clock.NewFake(epoch), store: newMemStore(), rec: &recorder{}, logs: &logBuf{}}
	e.up = sim.New(sim.Options{Clock: e.clk})
	t.Cleanup(e.up.Close)
	e.oa = e.up.OAuth(oo)
	if err := e.oa.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.oa.Close)
	e.m = NewManager(ManagerOptions{Clock: e.clk, Store: e.store, Emit: e.rec, Logf: e.logs.logf})
	e.anth = Anthropic(e.oa.URL() + "/v1/oauth/token")
	e.anth.AuthorizeURL = e.oa.URL() + "/oauth/authorize"
	e.anth.RedirectURI = "http://127.0.0.1:0/callback"
	e.oai = OpenAI(e.oa.URL()+"/oauth/token", e.oa.URL()+"/backend-api/codex")
	e.oai.AuthorizeURL = e.oa.URL() + "/oauth/authorize"
	e.oai.RedirectURI = "http://127.0.0.1:0/auth/callback"
	return e
}

// login stores a fresh login (as if made with `subpool login`) under id.
func (e *env) login(id, provider string) sim.OAuthTokens {
	g := e.oa.Grant(provider)
	e.store.toks[id] = Tokens{Access: g.Access, Refresh: g.Refresh, IDToken: g.IDToken, AccountID: g.AccountID, Email: g.Email, ExpiresAt: g.ExpiresAt}
	return g
}

// guard is a hang guard, not a timing assertion: it only ends a test
// that deadlocked.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// noSecret fails when any of the secrets shows up in s.
func noSecret(t *testing.T, where, s string, secrets ...string) {
	t.Helper()
	for _, sec := range secrets {
		if sec != "" && strings.Contains(s, sec) {
			t.Fatalf("a secret leaked into %s: %s", where, s)
		}
	}
}

func isRelogin(err error) bool { return errors.Is(err, auth.ErrRelogin) }
