package pool

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// t0 is in UTC so that times in failure output do not depend on the machine.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// recorder is an Emitter that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []api.Event
}

func (r *recorder) Emit(e api.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// take returns the events of the given types (all when none given) and
// forgets every event recorded so far.
func (r *recorder) take(types ...api.EventType) []api.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []api.Event
	for _, e := range r.events {
		if len(types) == 0 || slices.Contains(types, e.Type) {
			out = append(out, e)
		}
	}
	r.events = nil
	return out
}

type fixture struct {
	t   *testing.T
	p   *Pool
	clk *clock.Fake
	rec *recorder

	// scratch for step tables
	held    *Lease
	changed <-chan struct{}
}

// newFixture builds a pool on a fake clock with one credential per id, all
// of provider "anthropic", labelled with their ids, and forgets the
// credential_added events.
func newFixture(t *testing.T, cfg Config, ids ...string) *fixture {
	t.Helper()
	f := &fixture{t: t, clk: clock.NewFake(t0), rec: &recorder{}}
	f.p = New(f.clk, cfg, f.rec)
	for _, id := range ids {
		f.p.Add(Credential{ID: id, Provider: "anthropic", Label: id, Kind: api.KindAPIKey})
	}
	f.rec.take()
	return f
}

func (f *fixture) now() time.Time { return f.clk.Now() }

// pick picks for model and releases at once, returning the credential id.
func (f *fixture) pick(model string) string {
	f.t.Helper()
	l, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: model})
	if err != nil {
		f.t.Fatalf("Pick(%q): %v", model, err)
	}
	l.Release()
	f.checkBudgets()
	return l.Credential.ID
}

// unavailable picks for model and expects *Unavailable.
func (f *fixture) unavailable(model string) *Unavailable {
	f.t.Helper()
	l, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: model})
	var u *Unavailable
	if !errors.As(err, &u) {
		if l != nil {
			l.Release()
			f.t.Fatalf("Pick(%q) = %s, want *Unavailable", model, l.Credential.ID)
		}
		f.t.Fatalf("Pick(%q) error = %v, want *Unavailable", model, err)
	}
	f.checkBudgets()
	return u
}

// checkBudgets checks the budget bookkeeping of every credential: the
// exhausted count matches its budgets, the per-model lease counts add up
// to its in-flight count, and no answer is awaited beyond the leases out.
func (f *fixture) checkBudgets() {
	f.t.Helper()
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	for _, c := range f.p.creds {
		ex, in := 0, 0
		for m, b := range c.buds {
			if b.exhausted() {
				ex++
			}
			in += b.inFlight
			if b.model != m || b.unanswered < 0 || b.unanswered > b.inFlight {
				f.t.Fatalf("%s: budget %q is %+v", c.ID, m, *b)
			}
		}
		if ex != c.exhausted || in != c.inFlight {
			f.t.Fatalf("%s: exhausted %d, counted %d; in flight %d, by model %d", c.ID, c.exhausted, ex, c.inFlight, in)
		}
	}
}

func (f *fixture) status(id string) api.CredentialStatus {
	f.t.Helper()
	for _, s := range f.p.Status("") {
		if s.ID == id {
			return s
		}
	}
	f.t.Fatalf("no status for %s", id)
	return api.CredentialStatus{}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// SetUtilization sets the usage a credential reports as its plan windows
// would, for tests that state usage directly rather than through an
// answer's headers (SetQuota).
func (p *Pool) SetUtilization(id string, u *api.Utilization) {
	p.mu.Lock()
	if c := p.byID[id]; c != nil {
		c.util = u
	}
	p.mu.Unlock()
}
