package daemon

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/events"
	"github.com/subpool/subpool/proxy/pool"
)

// bearerAuth hands out "Bearer <id>", which the sim takes for the
// credential's secret.
type bearerAuth struct{}

func (bearerAuth) Auth(_ context.Context, c pool.Credential, _ bool) (auth.Auth, error) {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+c.ID)
	return auth.Auth{Header: h}, nil
}

// pollFixture is a poller on a fake clock in front of the sim's usage
// endpoints, with a pool holding the given credentials.
type pollFixture struct {
	t    *testing.T
	clk  *clock.Fake
	up   *sim.Server
	pool *pool.Pool
	u    *usagePoller
	// every is [usage] poll as the live config has it.
	every atomic.Int64
	logs  []string
	mu    sync.Mutex
}

func newPollFixture(t *testing.T, creds ...pool.Credential) *pollFixture {
	t.Helper()
	f := &pollFixture{t: t, clk: clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))}
	f.up = sim.New(sim.Options{Clock: f.clk})
	if err := f.up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.up.Close)
	f.pool = pool.New(f.clk, pool.Config{}, nil)
	for _, c := range creds {
		f.pool.Add(c)
	}
	provs := config.Default().Providers
	a, o := provs[config.Anthropic], provs[config.OpenAI]
	a.UsageURL = f.up.URL() + "/api/oauth/usage"
	o.UsageURL = f.up.URL() + "/backend-api/wham/usage"
	provs[config.Anthropic], provs[config.OpenAI] = a, o
	f.every.Store(int64(5 * time.Minute))
	f.u = &usagePoller{clk: f.clk, every: func() time.Duration { return time.Duration(f.every.Load()) }, pool: f.pool, auth: bearerAuth{}, providers: provs,
		client: &http.Client{Timeout: 10 * time.Second},
		logf: func(format string, a ...any) {
			f.mu.Lock()
			f.logs = append(f.logs, fmt.Sprintf(format, a...))
			f.mu.Unlock()
		}}
	return f
}

func claudeLogin(id string) pool.Credential {
	return pool.Credential{ID: id, Provider: config.Anthropic, Label: "Claude " + id, Kind: api.KindOAuth}
}

// polls counts the usage-endpoint calls per credential so far.
func (f *pollFixture) polls() map[string]int {
	n := map[string]int{}
	for _, r := range f.up.Requests() {
		if strings.HasSuffix(r.Path, "/usage") {
			n[r.Credential]++
		}
	}
	return n
}

// at advances the clock to d after the start and sweeps once.
func (f *pollFixture) at(d time.Duration) {
	f.t.Helper()
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if w := start.Add(d).Sub(f.clk.Now()); w > 0 {
		f.clk.Advance(w)
	}
	f.u.sweep(context.Background())
}

func (f *pollFixture) want(when string, want map[string]int) {
	f.t.Helper()
	if got := f.polls(); !reflect.DeepEqual(got, want) {
		f.t.Fatalf("%s: polls %v, want %v", when, got, want)
	}
}

// Issue 15, Show 2: a new login is polled at once, then at most once per
// interval while nothing else reports; a login a request reported on is
// not polled; API keys never are; the windows reach the pool.
func TestUsagePollOnlyIdleLoginsOncePerInterval(t *testing.T) {
	f := newPollFixture(t, claudeLogin("idle"), claudeLogin("busy"),
		pool.Credential{ID: "key", Provider: config.Anthropic, Kind: api.KindAPIKey},
		pool.Credential{ID: "gpt", Provider: config.OpenAI, Label: "ChatGPT", Kind: api.KindOAuth})
	f.up.SetUtilization("idle", 0.42, 0.1)
	f.up.SetUtilization("gpt", 0.3, 0.6)
	// "busy" answered a request just now.
	f.pool.SetQuota("busy", classify.Quota{Windows: []classify.Window{{Window: api.Window{Name: "5h", Used: 0.5}, Length: 5 * time.Hour}}})

	f.at(0)
	f.want("at start", map[string]int{"idle": 1, "gpt": 1})
	for _, r := range f.up.Requests() {
		if r.Credential == "idle" && !strings.Contains(r.Header.Get("anthropic-beta"), "oauth-2025-04-20") {
			t.Fatalf("Claude poll without the oauth beta: %v", r.Header)
		}
		if r.Credential == "gpt" && r.Path != "/backend-api/wham/usage" {
			t.Fatalf("ChatGPT polled at %s", r.Path)
		}
	}
	s := statusOf(t, f.pool, "idle")
	if s.Usage == nil || len(s.Usage.Windows) != 2 || s.Usage.Windows[0].Name != "5h" || s.Usage.Windows[0].Used != 0.42 {
		t.Fatalf("idle's windows %+v", s.Usage)
	}
	if w := statusOf(t, f.pool, "gpt").Usage.Windows; len(w) != 2 || w[1].Name != "7d" || !w[1].Binding {
		t.Fatalf("gpt's windows %+v", w)
	}

	f.at(5 * time.Second)
	f.at(4*time.Minute + 55*time.Second)
	f.want("within the interval", map[string]int{"idle": 1, "gpt": 1})

	// "gpt" is used meanwhile: a response reports its windows.
	f.pool.SetQuota("gpt", classify.Quota{Windows: []classify.Window{{Window: api.Window{Name: "5h", Used: 0.31}, Length: 5 * time.Hour}}})
	f.at(5 * time.Minute)
	f.want("after the interval", map[string]int{"idle": 2, "gpt": 1, "busy": 1})
	f.at(10 * time.Minute)
	f.want("two intervals", map[string]int{"idle": 3, "gpt": 2, "busy": 2})
}

// [usage] poll is a live key: a reload that changes it applies from the
// next look, shortening, lengthening, or turning polling off and on.
func TestUsagePollIntervalFollowsTheLiveConfig(t *testing.T) {
	f := newPollFixture(t, claudeLogin("idle"))
	f.at(0)
	f.want("at start", map[string]int{"idle": 1})

	f.every.Store(int64(time.Minute)) // edited from 5 minutes
	f.at(time.Minute)
	f.want("a minute later, on the new interval", map[string]int{"idle": 2})

	f.every.Store(0) // polling turned off
	f.at(30 * time.Minute)
	f.want("while off", map[string]int{"idle": 2})

	f.every.Store(int64(10 * time.Minute)) // and on again
	f.at(31 * time.Minute)
	f.want("on again, its last poll long past", map[string]int{"idle": 3})
	f.at(40 * time.Minute)
	f.want("within the new interval", map[string]int{"idle": 3})
	f.at(41 * time.Minute)
	f.want("after it", map[string]int{"idle": 4})
}

// Issue 15, Show 2: paused and parked logins are not polled.
func TestUsagePollSkipsPausedAndParked(t *testing.T) {
	f := newPollFixture(t, claudeLogin("p"), claudeLogin("k"))
	f.pool.Pause("p")
	f.pool.Park("k", "", api.ParkRelogin, "refresh token revoked")
	f.at(0)
	f.at(10 * time.Minute)
	f.want("paused and parked", map[string]int{})
	f.pool.Resume("p")
	f.at(10*time.Minute + 5*time.Second)
	f.want("resumed", map[string]int{"p": 1})
}

// Issue 15, Show 2: 500 and 429 back off exponentially (a Retry-After
// longer than the step is honoured), and no refusal changes the login's
// state.
func TestUsagePollBacksOffAndNeverTouchesState(t *testing.T) {
	f := newPollFixture(t, claudeLogin("a"))
	f.up.ScriptUsage("a",
		sim.Step{Status: 500},
		sim.Step{Status: 429},
		sim.Step{Status: 500},
		sim.Step{Status: 429, Header: map[string]string{"retry-after": "600"}},
	)
	before := statusOf(t, f.pool, "a")
	f.at(0)
	f.want("first", map[string]int{"a": 1})
	f.at(25 * time.Second)
	f.want("inside the 30 s backoff", map[string]int{"a": 1})
	f.at(30 * time.Second) // 429
	f.want("after 30 s", map[string]int{"a": 2})
	f.at(85 * time.Second)
	f.want("inside the 60 s backoff", map[string]int{"a": 2})
	f.at(90 * time.Second) // 500
	f.want("after 60 s more", map[string]int{"a": 3})
	f.at(90*time.Second + 2*time.Minute) // 429, retry-after 10m
	f.want("after 2 min more", map[string]int{"a": 4})
	f.at(90*time.Second + 2*time.Minute + 5*time.Minute)
	f.want("the 4 min step is shorter than retry-after", map[string]int{"a": 4})
	f.at(90*time.Second + 12*time.Minute) // success
	f.want("after retry-after", map[string]int{"a": 5})

	after := statusOf(t, f.pool, "a")
	if after.State != before.State || len(after.Cooldowns) != 0 || len(after.Parks) != 0 || after.Reason != "" || after.Counters != before.Counters {
		t.Fatalf("a refused poll changed the login: %+v", after)
	}
	if after.Usage == nil {
		t.Fatal("the successful poll reported nothing")
	}
	f.at(90*time.Second + 12*time.Minute + 4*time.Minute)
	f.want("the interval again after a success", map[string]int{"a": 5})
	if len(f.logs) != 1 {
		t.Fatalf("logged %q; one line per run of failures", f.logs)
	}
}

// Issue 15, Build: a Claude login without the user:profile scope is told
// once and not polled again.
func TestUsagePollStopsWithoutScope(t *testing.T) {
	f := newPollFixture(t, claudeLogin("a"))
	f.up.ScriptUsage("a", sim.Step{Status: 403, Body: `{"type":"error","error":{"type":"permission_error","message":"OAuth token does not meet scope requirement user:profile"}}`})
	f.at(0)
	f.at(10 * time.Minute)
	f.at(20 * time.Minute)
	f.want("no scope", map[string]int{"a": 1})
	if len(f.logs) != 1 || !strings.Contains(f.logs[0], "user:profile") {
		t.Fatalf("logs %q", f.logs)
	}
	if s := statusOf(t, f.pool, "a"); !strings.Contains(s.Reason, "user:profile") || s.State != api.StateReady {
		t.Fatalf("status %+v", s)
	}
}

func statusOf(t *testing.T, p *pool.Pool, id string) api.CredentialStatus {
	t.Helper()
	for _, s := range p.Status("") {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no %s", id)
	return api.CredentialStatus{}
}

// modelRequests leaves out the usage polls (the poller asks the usage
// endpoint of every login it has no windows for, at start).
func modelRequests(recs []sim.Record) []sim.Record {
	var out []sim.Record
	for _, r := range recs {
		if !strings.HasSuffix(r.Path, "/usage") {
			out = append(out, r)
		}
	}
	return out
}

// Issue 44: a poll showing a login's spent 5h window full cools it until
// the reset; half an hour later the upstream has reset the window early,
// and the next poll ends the cooldown with a reason, on the injected
// clock, hours before the reset it announced.
func TestUsagePollEndsACooldownWhoseWindowResetEarly(t *testing.T) {
	f := newPollFixture(t)
	hub := events.NewHub(f.clk, 64)
	f.pool = pool.New(f.clk, pool.Config{}, hub)
	f.pool.Add(claudeLogin("a"))
	f.u.pool = f.pool
	f.up.SetUtilization("a", 1, 0.3)
	f.at(0)
	if s := statusOf(t, f.pool, "a"); s.State != api.StateCooling || len(s.Cooldowns) != 1 || s.Cooldowns[0].Until.Sub(f.clk.Now()) != 5*time.Hour {
		t.Fatalf("after the first poll: %+v, want cooling 5h for the spent window", s)
	}
	f.clk.Advance(30 * time.Minute)
	f.up.SetUtilization("a", 0.04, 0.3) // the window started over
	f.at(30 * time.Minute)
	all, _ := hub.Since(0)
	var ended []api.Event
	for _, e := range all {
		if e.Type == api.EventCooldownEnded {
			ended = append(ended, e)
		}
	}
	if len(ended) != 1 || !strings.Contains(ended[0].Reason, "5h window has room again (4% used)") {
		t.Fatalf("cooldown_ended %+v, want one naming the 5h window's room", ended)
	}
	if s := statusOf(t, f.pool, "a"); s.State != api.StateReady || len(s.Cooldowns) != 0 {
		t.Fatalf("after the poll with room: %+v, want ready", s)
	}
}
