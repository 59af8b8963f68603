package pool

import (
	"testing"
	"time"
)

// Issue 14, observed 6: a stale reason stayed on a credential that was
// ready again. A cooldown's reason goes when the cooldown ends and nothing
// else holds the credential; a 2xx (Confirm) clears the last reason when
// nothing holds it back; a reason still backed by a cooling model stays.
func TestReasonClearsWhenReady(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.p.CoolDown("a", "", ScopeCredential, 10*time.Second, "429 rate_limit_error")
	if s := f.status("a"); s.Reason != "429 rate_limit_error" {
		t.Fatalf("cooling reason %q", s.Reason)
	}
	f.clk.Advance(10 * time.Second)
	if s := f.status("a"); s.Reason != "" {
		t.Fatalf("ready again by its timer, reason %q", s.Reason)
	}

	// A reason set since by something else is not the cooldown's to clear.
	f.p.CoolDown("a", "", ScopeCredential, 10*time.Second, "429")
	f.p.SetReason("a", "token renewal failing")
	f.clk.Advance(10 * time.Second)
	if s := f.status("a"); s.Reason != "token renewal failing" {
		t.Fatalf("someone else's reason %q cleared by the cooldown's end", s.Reason)
	}
	// A 2xx clears it: the credential serves.
	f.p.Confirm("a", "m")
	if s := f.status("a"); s.Reason != "" {
		t.Fatalf("after a 2xx, reason %q", s.Reason)
	}

	// A model still cooling keeps its reason through a 2xx for another.
	f.p.CoolDown("b", "opus", ScopeModel, time.Minute, "opus limit")
	f.p.Confirm("b", "sonnet")
	if s := f.status("b"); s.Reason != "opus limit" {
		t.Fatalf("reason %q, want opus's while it cools", s.Reason)
	}
	f.clk.Advance(time.Minute)
	if s := f.status("b"); s.Reason != "" {
		t.Fatalf("after opus's cooldown ended, reason %q", s.Reason)
	}
}
