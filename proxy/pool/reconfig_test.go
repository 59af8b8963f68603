package pool

import (
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// A reload's ladder applies to the next cooldown; the one running keeps
// its end.
func TestSetTuningAppliesToTheNextCooldown(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p := New(clk, Config{Ladder: []time.Duration{30 * time.Second, time.Minute}}, nil)
	p.SetProvider("anthropic", LimitCredential)
	p.Add(Credential{ID: "a", Provider: "anthropic"})
	start := clk.Now()
	if r := p.CoolDown("a", "", ScopeCredential, 0, "429"); r.Until != start.Add(30*time.Second) {
		t.Fatalf("first hit until %v", r.Until.Sub(start))
	}
	p.SetTuning([]time.Duration{5 * time.Second, 7 * time.Second, 9 * time.Second}, 0, 0)
	if r := p.CoolDown("a", "", ScopeCredential, 0, "429"); !r.Kept || r.Until != start.Add(30*time.Second) {
		t.Fatalf("the running cooldown changed: %+v", r)
	}
	clk.Advance(31 * time.Second)
	now := clk.Now()
	r := p.CoolDown("a", "", ScopeCredential, 0, "429")
	if r.Until != now.Add(7*time.Second) || r.Step != 2 || r.Steps != 3 {
		t.Fatalf("second hit %+v, want step 2 of the new ladder (7s)", r)
	}
}
