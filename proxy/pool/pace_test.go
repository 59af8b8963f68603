package pool

import (
	"errors"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// limiter is an upstream's request limit as the upstream keeps it, and
// tells no one: its refusals are bare 429s.
type limiter interface{ allow(now time.Time) bool }

// fixedWindow takes q requests per window of length w, the windows
// starting at t0+phase.
type fixedWindow struct {
	q     int
	w     time.Duration
	phase time.Duration
	idx   int64
	used  int
}

func (l *fixedWindow) allow(now time.Time) bool {
	d := now.Sub(t0.Add(l.phase))
	i := int64(d / l.w)
	if d < 0 {
		i = int64(d/l.w) - 1
	}
	if i != l.idx {
		l.idx, l.used = i, 0
	}
	if l.used >= l.q {
		return false
	}
	l.used++
	return true
}

// rolling takes q requests in any span of length w.
type rolling struct {
	q    int
	w    time.Duration
	sent []time.Time
}

func (l *rolling) allow(now time.Time) bool {
	for len(l.sent) > 0 && !now.Before(l.sent[0].Add(l.w)) {
		l.sent = l.sent[1:]
	}
	if len(l.sent) >= l.q {
		return false
	}
	l.sent = append(l.sent, now)
	return true
}

// bucket is a token bucket: up to cap requests at once, one more every per.
type bucket struct {
	cap    float64
	per    time.Duration
	tokens float64
	at     time.Time
}

func (l *bucket) allow(now time.Time) bool {
	if l.at.IsZero() {
		l.tokens, l.at = l.cap, now
	}
	l.tokens = min(l.cap, l.tokens+float64(now.Sub(l.at))/float64(l.per))
	l.at = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// try sends one request for model "m" on id, if the pool lets it go, and
// answers it as l says: a success is confirmed and recorded, a refusal is
// a bare 429. err is the pool's refusal.
func (f *fixture) try(id string, l limiter) (served bool, res CooldownResult, err error) {
	lease, err := f.p.Acquire(id, "m")
	if err != nil {
		return false, res, err
	}
	defer lease.Release()
	if l.allow(f.now()) {
		f.p.Confirm(id, "m")
		f.p.Record(id, true, false)
		return true, res, nil
	}
	res = f.p.CoolDown(id, "m", ScopeCredential, 0, "429 rate_limit_error")
	f.p.Record(id, false, true)
	return false, res, nil
}

// drive offers key "a" more than its limit: a request every tick, queued,
// each sent as soon as the pool lets one go and answered at once. It
// counts the successes and refusals from warm on.
func (f *fixture) drive(l limiter, tick, warm, dur time.Duration) (ok, refused int) {
	queue := 0
	for end := f.now().Add(dur); f.now().Before(end); f.clk.Advance(tick) {
		queue = min(queue+1, 1000)
		for queue > 0 {
			served, _, err := f.try("a", l)
			if err != nil {
				break
			}
			queue--
			switch {
			case f.now().Sub(t0) < warm:
			case served:
				ok++
			default:
				refused++
			}
		}
	}
	return ok, refused
}

func (f *fixture) paces(id string) []api.Pace { return f.status(id).Paces }

// A key behind a limit that says nothing learns it: after half an hour,
// the next two and a half serve the limit's capacity, or nearly, with few
// refusals. Without pacing, the ladder alone climbs to its 5 minutes and
// serves 0.2 of a 1-minute window's capacity and 0.03 of the bucket's;
// with the outage probe every 2 s on top (Pick, where this sole key is
// its provider's probe) it serves all of it, with 83 % (5-minute windows)
// or 33 % (the others) of its attempts refused.
func TestPaceLearnsSilentLimits(t *testing.T) {
	for _, c := range []struct {
		name    string
		l       limiter
		perSec  float64 // the limit's capacity
		tick    time.Duration
		served  float64 // at least this share of capacity
		refused float64 // at most this share of attempts
		window  *fixedWindow
	}{
		// measured: 1.000 of capacity, 2.2 % refused
		{name: "fixed 30 per 5m", l: &fixedWindow{q: 30, w: 5 * time.Minute, phase: 17 * time.Second}, perSec: 30.0 / 300, tick: time.Second, served: 0.98, refused: 0.03},
		// 1.000, 0.9 %
		{name: "fixed 60 per 1m", l: &fixedWindow{q: 60, w: time.Minute, phase: 7 * time.Second}, perSec: 1, tick: 100 * time.Millisecond, served: 0.98, refused: 0.03},
		// 0.900, 2.5 %: a rolling window frees its requests one by one,
		// which a learned window follows only roughly
		{name: "rolling 30 per 5m", l: &rolling{q: 30, w: 5 * time.Minute}, perSec: 30.0 / 300, tick: time.Second, served: 0.88, refused: 0.03},
		// 0.993, 0.9 %
		{name: "rolling 60 per 1m", l: &rolling{q: 60, w: time.Minute}, perSec: 1, tick: 100 * time.Millisecond, served: 0.93, refused: 0.03},
		// 1.000, 4.4 %
		{name: "bucket of 10, 1 per s", l: &bucket{cap: 10, per: time.Second}, perSec: 1, tick: 100 * time.Millisecond, served: 0.98, refused: 0.06},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, Config{}, "a")
			warm, dur := 30*time.Minute, 3*time.Hour
			ok, refused := f.drive(c.l, c.tick, warm, dur)
			share, rshare := float64(ok)/(c.perSec*(dur-warm).Seconds()), float64(refused)/float64(max(ok+refused, 1))
			t.Logf("served %.3f of capacity, %d of %d attempts refused (%.1f %%), pace %+v", share, refused, ok+refused, 100*rshare, f.paces("a"))
			if share < c.served || rshare > c.refused {
				t.Errorf("served %.3f of capacity (want ≥ %.2f), %.1f %% refused (want ≤ %.0f %%)", share, c.served, 100*rshare, 100*c.refused)
			}
			if w, ok := c.l.(*fixedWindow); ok {
				ps := f.paces("a")
				if len(ps) != 1 || ps[0].Requests != w.q || ps[0].WindowMS > w.w.Milliseconds() || ps[0].WindowMS < w.w.Milliseconds()*9/10 {
					t.Errorf("pace %+v, want %d requests per just under %s", ps, w.q, w.w)
				}
			}
		})
	}
}

// learn has each key serve as much as its limiter and its pace let it,
// for dur.
func (f *fixture) learn(ls map[string]limiter, dur time.Duration) {
	for end := f.now().Add(dur); f.now().Before(end); f.clk.Advance(time.Second) {
		for _, id := range sortedKeys(ls) {
			for {
				if _, _, err := f.try(id, ls[id]); err != nil {
					break
				}
			}
		}
	}
}

// spend has id serve until its pace holds it, and returns the pool's
// refusal then.
func (f *fixture) spend(id string, l limiter) *Unavailable {
	f.t.Helper()
	for range 1000 {
		_, _, err := f.try(id, l)
		var u *Unavailable
		if errors.As(err, &u) {
			return u
		}
	}
	f.t.Fatalf("%s: never held", id)
	return nil
}

// setPace gives id a learned window of n requests per period (0: not
// known yet) that began at start, sent of them used.
func (f *fixture) setPace(id string, n int, period time.Duration, start time.Time, sent int) {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	c := f.p.byID[id]
	key{cred: c}.setPacer(&pacer{scope: ScopeCredential, n: n, period: period, start: start, sent: sent,
		used: f.now(), unit: 10 * time.Second})
}

// lease takes a slot on id for "m".
func (f *fixture) lease(id string) *Lease {
	f.t.Helper()
	l, err := f.p.Acquire(id, "m")
	if err != nil {
		f.t.Fatalf("Acquire(%s): %v", id, err)
	}
	return l
}

// ok answers l with a success, silent answers it with a bare 429.
func (f *fixture) ok(l *Lease) {
	f.p.Confirm(l.Credential.ID, "m")
	l.Release()
}

func (f *fixture) silent(l *Lease) CooldownResult {
	res := f.p.CoolDown(l.Credential.ID, "m", ScopeCredential, 0, "429 rate_limit_error")
	l.Release()
	return res
}

// A key's first bare 429 gets the ladder, as before. When the key served
// before it, a pace starts: half its successes as the window's first
// count, its length not known yet. A key that never served has only the
// ladder.
func TestPaceStartsFromWhatTheKeyServed(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	for range 4 {
		f.ok(f.lease("a"))
		f.clk.Advance(time.Second)
	}
	for _, id := range []string{"a", "b"} {
		if res := f.silent(f.lease(id)); !res.Started || res.Step != 1 || res.Until != f.now().Add(30*time.Second) {
			t.Errorf("%s: first bare 429 %+v, want the ladder's first step", id, res)
		}
	}
	if ps := f.paces("a"); len(ps) != 1 || ps[0].Requests != 2 || ps[0].WindowMS != 0 || ps[0].Scope != "credential" {
		t.Errorf("a's paces %+v, want one: 2 requests, the window's length not known", ps)
	}
	if ps := f.paces("b"); len(ps) != 0 {
		t.Errorf("b never served, paces %+v", ps)
	}
}

// A credential whose learned window is spent is passed over until the
// window's end, as one with a spent budget is; it stays ready, with no
// cooldown, and says why in Unavailable.
func TestPacedCredentialIsSkipped(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.setPace("a", 2, time.Minute, f.now(), 0)
	f.ok(f.lease("a"))
	f.ok(f.lease("a"))
	for range 3 {
		if id := f.pick("m"); id != "b" {
			t.Fatalf("picked %s, want b: a spent its window", id)
		}
	}
	_, err := f.p.Acquire("a", "m")
	var u *Unavailable
	if !errors.As(err, &u) || u.Paced != 1 || !u.HasNext || u.NextReady != time.Minute || u.Probe {
		t.Fatalf("Acquire(a) = %v (%+v), want paced for 1m", err, u)
	}
	want := "a: paced: next request in 1m (learned from 429s that named no reset time: 2 requests per 1m)"
	if len(u.Reasons) != 1 || u.Reasons[0] != want {
		t.Errorf("reasons %q, want %q", u.Reasons, want)
	}
	s := f.status("a")
	end := t0.Add(time.Minute)
	if s.State != api.StateReady || len(s.Cooldowns) != 0 || len(s.Paces) != 1 || s.Paces[0].Next == nil || !s.Paces[0].Next.Equal(end) || s.Paces[0].WindowMS != 60000 {
		t.Errorf("status %+v, want ready, no cooldown, paced until %s", s, end)
	}
	f.clk.Advance(time.Minute)
	if id := f.pick("m"); id != "a" {
		t.Errorf("at the window's end picked %s, want a", id)
	}
}

// With every credential paced, a request is told the earliest end, and
// Changed's channel closes at that instant, so the request waits a moment
// instead of being sent to be refused. The first request after a spent
// window goes alone.
func TestAllPacedWaitForTheEarliestWindow(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.setPace("a", 1, 40*time.Second, f.now(), 1)
	f.setPace("b", 1, 25*time.Second, f.now(), 1)
	ch := f.p.Changed()
	u := f.unavailable("m")
	if u.Paced != 2 || u.Total != 2 || !u.HasNext || u.NextReady != 25*time.Second || u.Probe {
		t.Fatalf("unavailable %+v, want both paced, the next in 25s", u)
	}
	if want := "every anthropic credential is paced to the limit its bare 429s showed for m; the next goes in 25s"; u.Error() != want {
		t.Errorf("error %q, want %q", u.Error(), want)
	}
	f.clk.Advance(25*time.Second - time.Millisecond)
	if closed(ch) {
		t.Fatal("woken before b's window ended")
	}
	f.clk.Advance(time.Millisecond)
	if !closed(ch) {
		t.Fatal("not woken when b's window ended")
	}
	refill := f.pickLease("m")
	if refill.Credential.ID != "b" {
		t.Fatalf("picked %s, want b", refill.Credential.ID)
	}
	if u := f.unavailable("m"); u.Paced != 1 || u.Busy != 1 {
		t.Fatalf("while b's first request after its window is out: %+v, want a paced, b busy", u)
	}
	f.ok(refill)
	if ps := f.paces("b"); len(ps) != 1 || ps[0].Next == nil || ps[0].Requests != 1 {
		t.Errorf("b after its refill: %+v, want its next window begun and spent (1 request)", ps)
	}
}

// A key held by its pace is neither cooling nor an outage: no probe goes
// early to the keys cooling on guesses beside it, and the wait is for the
// first of the pace's end and their cooldowns.
func TestPacedKeyIsNoOutage(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.setPace("a", 1, 40*time.Second, f.now(), 1)
	f.silent(f.lease("b"))
	for range 3 {
		u := f.unavailable("m")
		if u.Probe || u.Paced != 1 || u.Cooling != 1 || u.NextReady != 30*time.Second-(f.now().Sub(t0)) {
			t.Fatalf("at %s: %+v, want no probe, the wait b's cooldown", f.now().Sub(t0), u)
		}
		f.clk.Advance(outageProbeEvery)
	}
}

// A bare 429 after part of a window was served is a miss: the window
// takes what was sent in it less the refusals, the key waits for the
// window's end with no cooldown and no event, and its ladder starts over.
// Refusals of requests sent before the miss are the same event, each one
// request fewer; a success of one of them is not the window refilling.
func TestPaceMissWaitsForTheWindowsEnd(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	f.p.mu.Lock()
	f.p.byID["a"].ladders = map[string]ladderMem{"": {hits: 2, last: f.now()}} // two hits lately
	f.p.mu.Unlock()
	f.setPace("a", 5, time.Minute, f.now(), 0)
	f.rec.take()
	end := f.now().Add(time.Minute)
	first := f.lease("a")
	l2, l3 := f.lease("a"), f.lease("a")
	f.clk.Advance(time.Second)
	if res := f.silent(l2); !res.Paced || !res.Until.Equal(end) || res.Started || res.Kept {
		t.Fatalf("miss: %+v, want paced until the window's end %s", res, end)
	}
	if res := f.silent(l3); !res.Paced {
		t.Fatalf("a refusal sent with the miss: %+v, want paced", res)
	}
	f.ok(first)
	if ev := f.rec.take(api.EventCooldownStarted, api.EventCooldownEnded); len(ev) != 0 {
		t.Errorf("events %+v, want none", ev)
	}
	ps := f.paces("a")
	if len(ps) != 1 || ps[0].Requests != 1 || ps[0].Next == nil || !ps[0].Next.Equal(end) {
		t.Fatalf("paces %+v, want 1 request (3 sent, 2 refused), held until %s", ps, end)
	}
	if s := f.status("a"); s.State != api.StateReady || len(s.Cooldowns) != 0 {
		t.Errorf("status %+v, want ready with no cooldown", s)
	}
	f.p.mu.Lock()
	mem := f.p.byID["a"].ladders[""]
	f.p.mu.Unlock()
	if mem != (ladderMem{}) {
		t.Errorf("ladder memory %+v after a miss, want started over", mem)
	}
	// At the end, one request goes alone; served, the next window begins.
	f.clk.Advance(end.Sub(f.now()))
	refill := f.lease("a")
	if _, err := f.p.Acquire("a", "m"); err == nil {
		t.Fatal("a second request went with the first after the window's end")
	}
	f.ok(refill)
	if ps := f.paces("a"); len(ps) != 1 || ps[0].Next == nil || ps[0].Requests != 1 {
		t.Errorf("after the refill: %+v", ps)
	}
}

// Refused at its window's end too, a key waits its spacing (the window
// over what it takes), then twice that, and so on while the waits are
// shorter than the ladder's first step; from there the ladder cools it
// (30 s, 60 s, 5 m), so a limit that lasts is treated as any other.
func TestPacedKeyStillGetsTheLadder(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	f.setPace("a", 6, time.Minute, f.now().Add(-time.Minute), 6)
	for _, want := range []struct {
		paced bool
		wait  time.Duration
		step  int
	}{{true, 10 * time.Second, 0}, {true, 20 * time.Second, 0}, {false, 30 * time.Second, 1}, {false, time.Minute, 2}, {false, 5 * time.Minute, 3}, {false, 5 * time.Minute, 3}} {
		res := f.silent(f.lease("a"))
		if res.Paced != want.paced || res.Until.Sub(f.now()) != want.wait || res.Step != want.step || (!want.paced && !res.Started) {
			t.Fatalf("at %s: %+v, want paced %v, %s, step %d", f.now().Sub(t0), res, want.paced, want.wait, want.step)
		}
		f.clk.Advance(want.wait)
	}
}

// A success right after a miss, one refusal between, is no refill: the
// limit frees requests one by one (a rolling window). The window goes on,
// one request at a time, and counts what it served.
func TestPaceFollowsALimitThatFreesOneByOne(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	f.setPace("a", 3, 0, f.now(), 0)
	for range 3 {
		f.ok(f.lease("a"))
	}
	l := f.lease("a")
	if _, err := f.p.Acquire("a", "m"); err == nil {
		t.Fatal("past its count, a window of unknown length took two at once")
	}
	if res := f.silent(l); !res.Paced || res.Until.Sub(f.now()) != 10*time.Second {
		t.Fatalf("miss: %+v, want a wait of the spacing", res)
	}
	f.clk.Advance(10 * time.Second)
	f.ok(f.lease("a"))
	if ps := f.paces("a"); len(ps) != 1 || ps[0].Requests != 4 || ps[0].WindowMS != 0 || ps[0].Next != nil {
		t.Errorf("paces %+v, want the window going on with 4 served and its length still unknown", ps)
	}
}

// The pace is a guess for where the upstream says nothing: headers that
// say the limit end it, as do a quiet spell and reset.
func TestPaceForgottenWhenTheHeadersTell(t *testing.T) {
	window := func(f *fixture) api.Quota {
		reset := f.now().Add(time.Hour)
		return api.Quota{Windows: []api.QuotaWindow{{Window: api.Window{Name: "five_hour", Used: 0.2, ResetsAt: &reset}, Length: 5 * time.Hour}}}
	}
	for _, c := range []struct {
		name string
		tell func(f *fixture)
	}{
		{"a 429 with a reset time", func(f *fixture) { f.p.CoolDown("a", "m", ScopeCredential, time.Second, "429 retry-after 1") }},
		{"a request budget", func(f *fixture) { f.p.SetBudget("a", "m", 10, f.now().Add(time.Minute)) }},
		{"usage windows", func(f *fixture) { f.p.SetQuota("a", window(f)) }},
		{"a quiet spell", func(f *fixture) { f.clk.Advance(DefaultResetAfter + time.Second) }},
		{"reset", func(f *fixture) { f.p.Reset("a") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, Config{}, "a")
			f.setPace("a", 1, 20*time.Minute, f.now(), 1)
			if len(f.paces("a")) != 1 {
				t.Fatal("no pace to forget")
			}
			c.tell(f)
			if ps := f.paces("a"); len(ps) != 0 {
				t.Errorf("paces %+v, want none", ps)
			}
			f.clk.Advance(2 * time.Second) // past the 429's own second
			if _, err := f.p.Acquire("a", "m"); err != nil {
				t.Errorf("after %s: %v, want a free of its pace", c.name, err)
			}
		})
	}
}

// A model's limit is paced for that model: the others on the key go on.
func TestPaceIsPerModelWhereTheLimitIs(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	for range 4 {
		f.ok(f.lease("a"))
		f.clk.Advance(time.Second)
	}
	l := f.lease("a")
	f.p.CoolDown("a", "m", ScopeModel, 0, "429 per model")
	l.Release()
	if ps := f.paces("a"); len(ps) != 1 || ps[0].Scope != "model" || ps[0].Model != "m" {
		t.Fatalf("paces %+v, want one for model m", ps)
	}
	if _, err := f.p.Acquire("a", "other"); err != nil {
		t.Errorf("another model: %v", err)
	}
}
