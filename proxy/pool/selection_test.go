package pool

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// Scenario 6: equal credentials alternate, whether or not the leases are
// still held, and on a clock that does not move between picks.
func TestPickAlternatesEqualCredentials(t *testing.T) {
	f := newFixture(t, Config{}, "A", "B")
	var got []string
	for range 10 {
		got = append(got, f.pick("m"))
	}
	if want := strings.Split("A B A B A B A B A B", " "); !slices.Equal(got, want) {
		t.Fatalf("released picks %v, want %v", got, want)
	}
	got = got[:0]
	for range 4 {
		l, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.Credential.ID)
	}
	if want := strings.Split("A B A B", " "); !slices.Equal(got, want) {
		t.Fatalf("held picks %v, want %v", got, want)
	}
}

func TestPickSkipsPaused(t *testing.T) {
	f := newFixture(t, Config{}, "A", "B")
	if err := f.p.Pause("A"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := f.pick("m"); got != "B" {
			t.Fatalf("picked %s, want B", got)
		}
	}
	f.p.Pause("B")
	u := f.unavailable("m")
	if u.Paused != 2 || u.HasNext {
		t.Fatalf("%+v, want 2 paused, no next", u)
	}
	if want := "no anthropic credential can take a request for m now: A: paused (subpool resume A); B: paused (subpool resume B)"; u.Error() != want {
		t.Fatalf("Error() = %q", u.Error())
	}
	f.p.Resume("A")
	if got := f.pick("m"); got != "A" {
		t.Fatalf("after Resume picked %s, want A", got)
	}
	if err := f.p.Pause("nope"); err != ErrUnknown {
		t.Fatalf("Pause(unknown) = %v", err)
	}
}

func TestInFlightLimit(t *testing.T) {
	f := newFixture(t, Config{MaxInFlight: 1}, "A", "B")
	req := PickRequest{Provider: "anthropic", Model: "m"}
	a, _ := f.p.Pick(req)
	b, _ := f.p.Pick(req)
	if a.Credential.ID != "A" || b.Credential.ID != "B" {
		t.Fatalf("picked %s, %s", a.Credential.ID, b.Credential.ID)
	}
	u := f.unavailable("m")
	if u.Busy != 2 || u.HasNext {
		t.Fatalf("%+v, want 2 busy and no time to wait for", u)
	}
	if !strings.Contains(u.Error(), "A: busy (1 in flight, limit 1)") {
		t.Fatalf("Error() = %q", u.Error())
	}
	a.Release()
	a.Release() // idempotent: must not free a second slot
	if s := f.status("A"); s.InFlight != 0 {
		t.Fatalf("A in flight %d after double release, want 0", s.InFlight)
	}
	a2, err := f.p.Pick(req)
	if err != nil || a2.Credential.ID != "A" {
		t.Fatalf("after release: %v %v, want A", a2, err)
	}
	f.unavailable("m") // A holds its one slot again
	a.Release()        // the stale lease must not free a2's slot
	f.unavailable("m")
	a2.Release()
	b.Release()

	// A credential's own limit wins over the default.
	f.p.Add(Credential{ID: "A", Provider: "anthropic", Label: "A", Kind: api.KindAPIKey, MaxInFlight: 2})
	var held []*Lease
	for range 3 {
		l, err := f.p.Pick(req)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	if s := f.status("A"); s.InFlight != 2 {
		t.Fatalf("A in flight %d, want its own limit 2", s.InFlight)
	}
	f.unavailable("m")
	for _, l := range held {
		l.Release()
	}
}

func TestPickPrefersHeadroom(t *testing.T) {
	f := newFixture(t, Config{}, "A", "B", "C")
	f.p.SetUtilization("A", &api.Utilization{FiveHour: &api.Window{Used: 0.8}})
	f.p.SetUtilization("B", &api.Utilization{FiveHour: &api.Window{Used: 0.2}, SevenDay: &api.Window{Used: 0.3}})
	f.p.SetUtilization("C", &api.Utilization{SevenDay: &api.Window{Used: 0.9}})
	for range 3 {
		if got := f.pick("m"); got != "B" {
			t.Fatalf("picked %s, want B (most headroom)", got)
		}
	}
	// Within one 5-point band, least recently used decides.
	f.p.SetUtilization("A", &api.Utilization{FiveHour: &api.Window{Used: 0.31}})
	if got := []string{f.pick("m"), f.pick("m"), f.pick("m")}; !slices.Equal(got, []string{"A", "B", "A"}) {
		t.Fatalf("picks %v, want A B A (A and B share a band)", got)
	}
	// A window whose reset has passed no longer counts.
	reset := t0.Add(time.Hour)
	f.p.SetUtilization("C", &api.Utilization{SevenDay: &api.Window{Used: 0.99, ResetsAt: &reset}})
	f.clk.AdvanceTo(reset)
	if got := f.pick("m"); got != "C" {
		t.Fatalf("picked %s, want C once its window reset", got)
	}
}

func TestHeadroomAt(t *testing.T) {
	later := t0.Add(time.Minute)
	tests := []struct {
		u    *api.Utilization
		want float64
	}{
		{nil, 1},
		{&api.Utilization{}, 1},
		{&api.Utilization{FiveHour: &api.Window{Used: 0.25}, SevenDay: &api.Window{Used: 0.5}}, 0.5},
		{&api.Utilization{FiveHour: &api.Window{Used: 1.7}}, 0},
		{&api.Utilization{FiveHour: &api.Window{Used: 0.9, ResetsAt: &t0}, SevenDay: &api.Window{Used: 0.5}}, 0.5},
		{&api.Utilization{FiveHour: &api.Window{Used: 0.75, ResetsAt: &later}}, 0.25},
	}
	for i, tt := range tests {
		if got := headroomAt(tt.u, t0); got != tt.want {
			t.Errorf("%d: headroomAt = %v, want %v", i, got, tt.want)
		}
	}
}

// Scenario 6: NextReady sees a cooldown set a moment ago, not a stale view.
func TestNextReadyReflectsCooldownsJustSet(t *testing.T) {
	f := newFixture(t, Config{}, "A", "B")
	if d, ok := nextReady(f.p, "anthropic", "m"); !ok || d != 0 {
		t.Fatalf("NextReady with ready credentials = %s %v, want 0 true", d, ok)
	}
	f.p.CoolDown("A", "", ScopeCredential, 0, "429")
	f.clk.Advance(10 * time.Second)
	f.p.CoolDown("B", "m", ScopeModel, 45*time.Second, "model 429")
	if d, ok := nextReady(f.p, "anthropic", "m"); !ok || d != 20*time.Second {
		t.Fatalf("NextReady = %s %v, want 20s true", d, ok)
	}
	if d, ok := nextReady(f.p, "anthropic", "other"); !ok || d != 0 {
		t.Fatalf("NextReady for another model = %s %v, want 0 true (B is ready for it)", d, ok)
	}
	u := f.unavailable("m")
	if u.Cooling != 2 || u.NextReady != 20*time.Second || !u.HasNext {
		t.Fatalf("%+v", u)
	}
	wantReasons := []string{"A: cooling 20s (429)", "B: cooling 45s for m (model 429)"}
	if !slices.Equal(u.Reasons, wantReasons) {
		t.Fatalf("Reasons %q, want %q", u.Reasons, wantReasons)
	}
	if d, ok := nextReady(f.p, "nobody", "m"); ok || d != 0 {
		t.Fatalf("NextReady for an empty provider = %s %v", d, ok)
	}
}

func TestUnavailableMessages(t *testing.T) {
	tests := []struct {
		u    Unavailable
		want string
	}{
		{Unavailable{Provider: "zai"}, "no zai credentials; add one with `subpool add-key zai`"},
		{Unavailable{Provider: "anthropic", Total: 1, Cooling: 1, HasNext: true, NextReady: 250 * time.Second},
			"the only anthropic credential is cooling down; ready in 4m10s"},
		{Unavailable{Provider: "openai", Model: "gpt-5", Total: 2, Cooling: 2, HasNext: true, NextReady: 90*time.Minute + time.Millisecond},
			"all 2 openai credentials are cooling down for gpt-5; next ready in 1h30m"},
		{Unavailable{Provider: "anthropic", Total: 2, Cooling: 1, Excluded: 1, HasNext: true, NextReady: ms(1),
			Reasons: []string{"a: already tried by this request", "b: cooling 1s"}},
			"no anthropic credential can take a request now: a: already tried by this request; b: cooling 1s; next ready in 1s"},
	}
	for _, tt := range tests {
		if got := tt.u.Error(); got != tt.want {
			t.Errorf("Error() = %q\nwant      %q", got, tt.want)
		}
	}
}

func TestExcludeSkipsTriedCredentials(t *testing.T) {
	f := newFixture(t, Config{}, "A", "B")
	req := PickRequest{Provider: "anthropic", Model: "m", Exclude: map[string]bool{"A": true}}
	for range 2 {
		l, err := f.p.Pick(req)
		if err != nil || l.Credential.ID != "B" {
			t.Fatalf("Pick = %v %v, want B", l, err)
		}
		l.Release()
	}
	req.Exclude["B"] = true
	_, err := f.p.Pick(req)
	var u *Unavailable
	if !errors.As(err, &u) || u.Excluded != 2 || u.HasNext {
		t.Fatalf("err %v, want 2 excluded", err)
	}
}

func TestAcquire(t *testing.T) {
	f := newFixture(t, Config{MaxInFlight: 1}, "A", "B")
	l, err := f.p.Acquire("B", "m")
	if err != nil || l.Credential.ID != "B" {
		t.Fatalf("Acquire(B) = %v %v", l, err)
	}
	if _, err := f.p.Acquire("B", "m"); err == nil {
		t.Fatal("Acquire past the in-flight limit succeeded")
	}
	l.Release()
	// Acquire counts as a use: the next Pick prefers A.
	if got := f.pick("m"); got != "A" {
		t.Fatalf("picked %s after B was acquired, want A", got)
	}
	f.p.CoolDown("B", "m", ScopeModel, 0, "429")
	_, err = f.p.Acquire("B", "m")
	var u *Unavailable
	if !errors.As(err, &u) || u.Total != 1 || u.Cooling != 1 || u.NextReady != 30*time.Second {
		t.Fatalf("Acquire(cooling B) err %v, want one credential cooling 30s", err)
	}
	if u.Error() != "the only anthropic credential is cooling down for m; ready in 30s" {
		t.Fatalf("Error() = %q", u.Error())
	}
	if l, err := f.p.Acquire("B", "other"); err != nil {
		t.Fatalf("Acquire(B, other model) = %v", err)
	} else {
		l.Release()
	}
	if _, err := f.p.Acquire("nope", "m"); err != ErrUnknown {
		t.Fatalf("Acquire(unknown) = %v", err)
	}
}

func TestPickWithoutCredentials(t *testing.T) {
	f := newFixture(t, Config{})
	u := f.unavailable("m")
	if u.Total != 0 || u.HasNext {
		t.Fatalf("%+v", u)
	}
}

func TestPickAcrossProviders(t *testing.T) {
	f := newFixture(t, Config{}, "A")
	f.p.Add(Credential{ID: "O", Provider: "openai"})
	l, err := f.p.Pick(PickRequest{Provider: "openai"})
	if err != nil || l.Credential.ID != "O" {
		t.Fatalf("Pick(openai) = %v %v", l, err)
	}
	l.Release()
	if got := f.pick(""); got != "A" {
		t.Fatalf("Pick(anthropic) = %s", got)
	}
	if got := f.p.Credentials("openai"); len(got) != 1 || got[0].ID != "O" {
		t.Fatalf("Credentials(openai) = %+v", got)
	}
	if got := f.p.Credentials(""); len(got) != 2 || got[0].ID != "A" || got[1].ID != "O" {
		t.Fatalf("Credentials() = %+v, want order added", got)
	}
}

func TestRemoveKeepsLeasesHarmless(t *testing.T) {
	f := newFixture(t, Config{}, "A", "B")
	l, _ := f.p.Pick(PickRequest{Provider: "anthropic"})
	f.p.CoolDown("A", "", ScopeCredential, 0, "")
	if err := f.p.Remove("A"); err != nil {
		t.Fatal(err)
	}
	l.Release()
	if _, ok := f.p.Credential("A"); ok {
		t.Fatal("A still held")
	}
	if err := f.p.Remove("A"); err != ErrUnknown {
		t.Fatalf("second Remove = %v", err)
	}
	f.rec.take()
	f.clk.Advance(time.Minute)
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("removed credential's timer fired: %+v", ev)
	}
	if got := f.pick(""); got != "B" {
		t.Fatalf("picked %s", got)
	}
}

// Many goroutines picking, releasing and cooling: the in-flight limit holds
// at every moment and every slot comes back. Run with -race.
func TestConcurrentPickRelease(t *testing.T) {
	clk := clock.NewFake(t0)
	p := New(clk, Config{MaxInFlight: 2}, nil)
	for _, id := range []string{"a", "b", "c", "d"} {
		p.Add(Credential{ID: id, Provider: "anthropic"})
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				l, err := p.Pick(PickRequest{Provider: "anthropic", Model: "m", Affinity: []string{"", "s1", "s2"}[i%3]})
				if err != nil {
					var u *Unavailable
					if !errors.As(err, &u) {
						errs <- err.Error()
					}
					continue
				}
				for _, s := range p.Status("anthropic") {
					if s.InFlight > 2 {
						errs <- s.ID + " over its in-flight limit"
					}
				}
				if (g+i)%50 == 0 {
					p.CoolDown(l.Credential.ID, "m", ScopeModel, time.Second, "")
				}
				l.Release()
				l.Release()
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	for _, s := range p.Status("") {
		if s.InFlight != 0 {
			t.Fatalf("%s in flight %d after all released", s.ID, s.InFlight)
		}
	}
}

// After a cooldown ends the credential takes one request until one
// succeeds: waiters do not stampede a key whose limit may not have lifted.
func TestCooledCredentialComesBackAsOneProbe(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := New(clk, Config{}, nil)
	p.Add(Credential{ID: "a", Provider: "anthropic"})
	p.CoolDown("a", "", ScopeCredential, time.Minute, "429")
	clk.Advance(time.Minute)
	probe, err := p.Pick(PickRequest{Provider: "anthropic"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pick(PickRequest{Provider: "anthropic"}); err == nil {
		t.Fatal("a second request joined the probe")
	} else if u := err.(*Unavailable); u.Busy != 1 {
		t.Fatalf("unavailable %+v", u)
	}
	p.Confirm("a", "") // the probe's answer began with 200
	l1, err1 := p.Pick(PickRequest{Provider: "anthropic"})
	l2, err2 := p.Pick(PickRequest{Provider: "anthropic"})
	if err1 != nil || err2 != nil {
		t.Fatalf("after a success the credential is open again: %v %v", err1, err2)
	}
	probe.Release()
	l1.Release()
	l2.Release()
}

// nextReady is how long until a credential of provider can take a
// request for model, as Explain tells it: (0, true) when one can now.
func nextReady(p *Pool, provider, model string) (time.Duration, bool) {
	u := p.Explain(PickRequest{Provider: provider, Model: model})
	if u == nil {
		return 0, true
	}
	return u.NextReady, u.HasNext
}
