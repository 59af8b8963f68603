package pool

import (
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Issue 14, observed 8: a check during fallback spent request budget.
// Explain answers without a lease: the last request the budget allows is
// still there for the Pick that follows, and nothing else moves.
func TestExplainSpendsNoBudget(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	reset := t0.Add(time.Minute)
	f.p.SetBudget("a", "m", 1, reset)
	f.rec.take()
	changes := 0
	f.p.OnChange(func() { changes++ })
	req := PickRequest{Provider: "anthropic", Model: "m", Affinity: "conv"}
	for range 10 {
		if u := f.p.Explain(req); u != nil {
			t.Fatalf("Explain = %v, want nil", u)
		}
	}
	if s := f.status("a"); s.InFlight != 0 || len(s.Cooldowns) != 0 || s.LastUsed != nil {
		t.Fatalf("after Explain: %+v, want untouched", s)
	}
	if ev := f.rec.take(); len(ev) != 0 || changes != 0 {
		t.Fatalf("Explain emitted %+v, changed %d", ev, changes)
	}
	if got := f.pick("m"); got != "a" {
		t.Fatalf("Pick after Explain = %s", got)
	}
	// That Pick spent it: now Explain says why and until when, as Pick.
	u := f.p.Explain(req)
	if u == nil || u.Cooling != 1 || !u.HasNext || u.NextReady != time.Minute || u.Probe {
		t.Fatalf("Explain with the budget spent = %+v, want cooling until the reset", u)
	}
	if want := f.unavailable("m"); u.Error() != want.Error() {
		t.Fatalf("Explain says %q, Pick %q", u.Error(), want.Error())
	}
}

func TestExplainMatchesPick(t *testing.T) {
	f := newFixture(t, Config{MaxInFlight: 1}, "a", "b")
	req := PickRequest{Provider: "anthropic", Model: "m"}
	f.p.Park("a", "", api.ParkRelogin, "revoked")
	l := f.pickLease("m")
	u := f.p.Explain(req)
	if u == nil || u.Parked != 1 || u.Busy != 1 || u.HasNext {
		t.Fatalf("Explain = %+v, want one parked, one busy", u)
	}
	l.Release()
	if u := f.p.Explain(req); u != nil {
		t.Fatalf("Explain after release = %v", u)
	}
	if u := f.p.Explain(PickRequest{Provider: "nobody"}); u == nil || u.Total != 0 {
		t.Fatalf("Explain for an unknown provider = %+v", u)
	}
}
