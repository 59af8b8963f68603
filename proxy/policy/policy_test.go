package policy

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
)

var cfg = Config{
	TransientBackoff: []time.Duration{250 * time.Millisecond, 750 * time.Millisecond},
	CapacityMax:      5 * time.Minute,
	MaxAttempts:      8,
	SoleProviderMax:  2 * time.Minute,
	MaxPoolWaits:     1000,
}

// rateLimitSpent is the final refusal after cfg's attempts all met rate
// limits.
const rateLimitSpent = "anthropic is rate limited on every credential tried: subpool made 8 upstream attempts (retry.max_attempts); last: why"

// capacitySpent is the final refusal after a spent capacity budget of cfg.
const capacitySpent = "anthropic is overloaded upstream (why); subpool waited it out for 5m0s (wait.capacity_max) and gave up — try again in a few minutes, or pick another model"

func verdict(c classify.Class, scope classify.Scope, retry time.Duration, status int) classify.Verdict {
	return classify.Verdict{Class: c, Scope: scope, RetryAfter: retry, Reason: "why", Status: status}
}

// decideRows are the rows of TestDecide.
func decideRows() []decideRow {
	first := Attempt{Attempts: 1, Model: "m", Provider: "anthropic"}
	with := func(f func(*Attempt)) Attempt { a := first; f(&a); return a }
	inStream := func(a Attempt) Attempt { a.Status = 0; return a }

	return append([]decideRow{
		// ok
		{"ok passes", first, verdict(classify.OK, "", 0, 200), Action{Kind: Pass, Count: CountSuccess}},

		// client_error: relayed with its own status; an in-stream one with
		// the status its error type has.
		{"client_error relays its status", with(func(a *Attempt) { a.Status = 400 }), verdict(classify.ClientError, "", 0, 400),
			Action{Kind: Relay, Status: 400, Count: CountSuccess}},
		{"client_error in a 200 stream relays as 400", inStream(first), verdict(classify.ClientError, "", 0, 400),
			Action{Kind: Relay, Status: 400, Count: CountSuccess}},
		{"client_error after retries still relays", with(func(a *Attempt) { a.Status = 413; a.Retries = 2; a.Attempts = 3 }), verdict(classify.ClientError, "", 0, 413),
			Action{Kind: Relay, Status: 413, Count: CountSuccess}},

		// rate_limit: cool the scope and rotate.
		{"rate_limit credential cools and rotates", with(func(a *Attempt) { a.Status = 429 }), verdict(classify.RateLimit, classify.ScopeCredential, 0, 429),
			Action{Kind: Rotate, Cool: &Cool{Scope: classify.ScopeCredential}, Count: CountRateLimit}},
		{"rate_limit keeps the upstream's time", with(func(a *Attempt) { a.Status = 429 }), verdict(classify.RateLimit, classify.ScopeCredential, 90*time.Second, 429),
			Action{Kind: Rotate, Cool: &Cool{Scope: classify.ScopeCredential, RetryAfter: 90 * time.Second}, Count: CountRateLimit}},
		{"rate_limit model scope", with(func(a *Attempt) { a.Status = 429 }), verdict(classify.RateLimit, classify.ScopeModel, 0, 429),
			Action{Kind: Rotate, Cool: &Cool{Scope: classify.ScopeModel}, Count: CountRateLimit}},
		{"rate_limit model scope without a model cools the credential", with(func(a *Attempt) { a.Status = 429; a.Model = "" }), verdict(classify.RateLimit, classify.ScopeModel, 0, 429),
			Action{Kind: Rotate, Cool: &Cool{Scope: classify.ScopeCredential}, Count: CountRateLimit}},
		{"rate_limit provider scope", with(func(a *Attempt) { a.Status = 429 }), verdict(classify.RateLimit, classify.ScopeProvider, 0, 429),
			Action{Kind: Rotate, Cool: &Cool{Scope: classify.ScopeProvider}, Count: CountRateLimit}},
		{"rate_limit in a 200 stream before any byte cools and rotates", inStream(first), verdict(classify.RateLimit, classify.ScopeCredential, 0, 429),
			Action{Kind: Rotate, Cool: &Cool{Scope: classify.ScopeCredential}, Count: CountRateLimit}},
		// Issue 43: the budget spent on rate limits was a 502 "gave up",
		// the opposite of what happened; it is the 429 it is, with the
		// upstream's time, and final (another round would spend as many).
		{"rate_limit on the last attempt fails as a 429", with(func(a *Attempt) { a.Status = 429; a.Attempts = 8 }), verdict(classify.RateLimit, classify.ScopeCredential, 0, 429),
			Action{Kind: Fail, Status: 429, Message: rateLimitSpent, Final: true, Cool: &Cool{Scope: classify.ScopeCredential}, Count: CountRateLimit}},
		{"rate_limit on the last attempt keeps the upstream's time", with(func(a *Attempt) { a.Status = 429; a.Attempts = 8 }), verdict(classify.RateLimit, classify.ScopeCredential, 40*time.Second, 429),
			Action{Kind: Fail, Status: 429, Message: rateLimitSpent, RetryAfter: 40 * time.Second, Final: true, Cool: &Cool{Scope: classify.ScopeCredential, RetryAfter: 40 * time.Second}, Count: CountRateLimit}},

		// transient: in place, then the upstream's answer or ours.
		{"transient first retry", with(func(a *Attempt) { a.Status = 503 }), verdict(classify.Transient, "", 0, 503),
			Action{Kind: Retry, Delay: 250 * time.Millisecond}},
		{"transient second retry", with(func(a *Attempt) { a.Status = 503; a.Retries = 1; a.Attempts = 2 }), verdict(classify.Transient, "", 0, 503),
			Action{Kind: Retry, Delay: 750 * time.Millisecond}},
		{"transient retries spent fails with the upstream's status", with(func(a *Attempt) { a.Status = 503; a.Retries = 2; a.Attempts = 3 }), verdict(classify.Transient, "", 0, 503),
			Action{Kind: Fail, Status: 503, Message: "anthropic upstream failed 3 times in a row (why); try again shortly", Count: CountFailure}},
		{"transient in a 200 stream, retries spent, fails with its status", with(func(a *Attempt) { a.Status = 0; a.Retries = 2; a.Attempts = 3 }), verdict(classify.Transient, "", 0, 500),
			Action{Kind: Fail, Status: 500, Message: "anthropic upstream failed 3 times in a row (why); try again shortly", Count: CountFailure}},
		{"transport error, retries spent, fails in our words", with(func(a *Attempt) { a.Status = 0; a.Retries = 2; a.Attempts = 3 }), verdict(classify.Transient, "", 0, 0),
			Action{Kind: Fail, Status: 502, Message: "anthropic upstream failed 3 times in a row (why); try again shortly", Count: CountFailure}},
		{"transient on the last attempt fails", with(func(a *Attempt) { a.Status = 503; a.Attempts = 8 }), verdict(classify.Transient, "", 0, 503),
			Action{Kind: Fail, Status: 502, Message: "gave up after 8 upstream attempts (retry.max_attempts); last: why", Final: true, Count: CountFailure}},
		// A stall (no first event, or a silence, before any byte reached
		// the client) cost the deadline's whole length: no retry in
		// place, another credential at once, this one not again.
		{"stall before any byte rotates and excludes", with(func(a *Attempt) { a.Status = 200; a.Stalled = true }), verdict(classify.Transient, "", 0, 0),
			Action{Kind: Rotate, Exclude: true, Count: CountFailure, CoolLater: &Cool{Scope: classify.ScopeCredential, RetryAfter: StallCooldown}}},
		{"stall on the last attempt fails", with(func(a *Attempt) { a.Status = 200; a.Stalled = true; a.Attempts = 8 }), verdict(classify.Transient, "", 0, 0),
			Action{Kind: Fail, Status: 502, Message: "gave up after 8 upstream attempts (retry.max_attempts); last: why", Final: true, Exclude: true, Count: CountFailure, CoolLater: &Cool{Scope: classify.ScopeCredential, RetryAfter: StallCooldown}}},
	}, laterDecideRows()...)
}

// laterDecideRows are TestDecide's rows from capacity on.
func laterDecideRows() []decideRow {
	first := Attempt{Attempts: 1, Model: "m", Provider: "anthropic"}
	with := func(f func(*Attempt)) Attempt { a := first; f(&a); return a }

	return []decideRow{
		// capacity: wait within the budget, then relay.
		{"capacity first answer backs off", with(func(a *Attempt) { a.Status = 529; a.Jitter = 0.5 }), verdict(classify.Capacity, "", 0, 529),
			Action{Kind: WaitCapacity, Delay: 750 * time.Millisecond}},
		{"capacity takes the upstream's time", with(func(a *Attempt) { a.Status = 529 }), verdict(classify.Capacity, "", 3*time.Second, 529),
			Action{Kind: WaitCapacity, Delay: 3 * time.Second}},
		{"capacity wait is cut to the budget left", with(func(a *Attempt) { a.Status = 529; a.CapacityElapsed = 5*time.Minute - time.Second; a.CapacityWaits = 9 }), verdict(classify.Capacity, "", 0, 529),
			Action{Kind: WaitCapacity, Delay: time.Second}},
		// A spent budget is subpool's own final 503: relaying the 529
		// had the client's retry loop start the whole wait again (issue 24).
		{"capacity budget spent ends it: a final 503", with(func(a *Attempt) { a.Status = 529; a.CapacityElapsed = 5 * time.Minute; a.CapacityWaits = 9 }), verdict(classify.Capacity, "", 0, 529),
			Action{Kind: Fail, Status: 503, Count: CountFailure, Final: true, Message: capacitySpent}},
		{"capacity in a 200 stream, budget spent: the same final 503", with(func(a *Attempt) { a.Status = 0; a.CapacityElapsed = 6 * time.Minute }), verdict(classify.Capacity, "", 0, 529),
			Action{Kind: Fail, Status: 503, Count: CountFailure, Final: true, Message: capacitySpent}},

		// A login's refusal of the requesting tool is no fault of the
		// login: nothing cools or parks, the tool is kept off it.
		{"client_error about the tool rotates and bars the tool", with(func(a *Attempt) { a.Status = 400 }), classify.Verdict{Class: classify.ClientError, Tool: true, Status: 400},
			Action{Kind: Rotate, BarTool: true}},

		// auth: refresh once, then park for a new login.
		{"auth_expired refreshes a login", with(func(a *Attempt) { a.Status = 401; a.CanRefresh = true }), verdict(classify.AuthExpired, classify.ScopeCredential, 0, 401),
			Action{Kind: Refresh}},
		{"auth_expired after a refresh parks", with(func(a *Attempt) { a.Status = 401; a.CanRefresh = true; a.Refreshed = true; a.Attempts = 2 }), verdict(classify.AuthExpired, classify.ScopeCredential, 0, 401),
			Action{Kind: Rotate, Count: CountFailure, Park: &Park{Kind: api.ParkRelogin, Reason: "still rejected after a token refresh: why"}}},
		{"auth_invalid on a login refreshes once", with(func(a *Attempt) { a.Status = 401; a.CanRefresh = true }), verdict(classify.AuthInvalid, classify.ScopeCredential, 0, 401),
			Action{Kind: Refresh}},
		{"auth_invalid on an API key parks", with(func(a *Attempt) { a.Status = 401 }), verdict(classify.AuthInvalid, classify.ScopeCredential, 0, 401),
			Action{Kind: Rotate, Count: CountFailure, Park: &Park{Kind: api.ParkRelogin, Reason: "why"}}},
		{"auth_expired in a 200 stream refreshes", with(func(a *Attempt) { a.Status = 0; a.CanRefresh = true }), verdict(classify.AuthExpired, classify.ScopeCredential, 0, 401),
			Action{Kind: Refresh}},

		// payment: park (the model, or the credential) and rotate.
		{"payment parks the credential", with(func(a *Attempt) { a.Status = 402 }), verdict(classify.Payment, classify.ScopeCredential, 0, 402),
			Action{Kind: Rotate, Count: CountFailure, Park: &Park{Kind: api.ParkPayment, Reason: "why"}}},
		{"payment for one model parks the model", with(func(a *Attempt) { a.Status = 403 }), verdict(classify.Payment, classify.ScopeModel, 0, 403),
			Action{Kind: Rotate, Count: CountFailure, Park: &Park{Kind: api.ParkPayment, Model: "m", Reason: "why"}}},

		// aborted: nothing more, no count.
		{"aborted stops", first, verdict(classify.Aborted, "", 0, 0), Action{Kind: Stop}},

		// After bytes reached the client the stream passes through; the
		// pool still learns.
		{"after bytes: rate_limit passes through and cools", with(func(a *Attempt) { a.Started = true }), verdict(classify.RateLimit, classify.ScopeCredential, time.Minute, 429),
			Action{Kind: Pass, Cool: &Cool{Scope: classify.ScopeCredential, RetryAfter: time.Minute}, Count: CountRateLimit}},
		{"after bytes: capacity passes through", with(func(a *Attempt) { a.Started = true }), verdict(classify.Capacity, "", 0, 529),
			Action{Kind: Pass, Count: CountFailure}},
		{"after bytes: transient passes through", with(func(a *Attempt) { a.Started = true }), verdict(classify.Transient, "", 0, 500),
			Action{Kind: Pass, Count: CountFailure}},
		{"after bytes: client_error passes through", with(func(a *Attempt) { a.Started = true }), verdict(classify.ClientError, "", 0, 400),
			Action{Kind: Pass, Count: CountSuccess}},
		{"after bytes: auth passes through", with(func(a *Attempt) { a.Started = true; a.CanRefresh = true }), verdict(classify.AuthExpired, classify.ScopeCredential, 0, 401),
			Action{Kind: Pass, Count: CountFailure}},
		{"region refusal parks the egress and rotates", with(func(a *Attempt) { a.Status = 403 }), verdict(classify.RegionBlocked, classify.ScopeProvider, 0, 403),
			Action{Kind: Rotate, Count: CountFailure, Park: &Park{Kind: api.ParkRegion, Reason: "why"}}},
		{"region refusal for a login parks rather than refreshing", with(func(a *Attempt) { a.Status = 400; a.CanRefresh = true }), verdict(classify.RegionBlocked, classify.ScopeProvider, 0, 400),
			Action{Kind: Rotate, Count: CountFailure, Park: &Park{Kind: api.ParkRegion, Reason: "why"}}},
		{"after bytes: region refusal passes through and parks", with(func(a *Attempt) { a.Started = true }), verdict(classify.RegionBlocked, classify.ScopeProvider, 0, 403),
			Action{Kind: Pass, Count: CountFailure, Park: &Park{Kind: api.ParkRegion, Reason: "why"}}},
		{"after bytes: payment passes through and parks", with(func(a *Attempt) { a.Started = true }), verdict(classify.Payment, classify.ScopeModel, 0, 402),
			Action{Kind: Pass, Count: CountFailure, Park: &Park{Kind: api.ParkPayment, Model: "m", Reason: "why"}}},
		{"after bytes: the client leaving stops", with(func(a *Attempt) { a.Started = true }), verdict(classify.Aborted, "", 0, 0),
			Action{Kind: Stop}},

		// A class the policy does not know is passed on, not guessed at.
		{"unknown class relays", with(func(a *Attempt) { a.Status = 418 }), verdict("teapot", "", 0, 418),
			Action{Kind: Relay, Status: 418, Count: CountFailure}},
	}
}

type decideRow struct {
	name string
	a    Attempt
	v    classify.Verdict
	want Action
}

// TestDecide is the policy as a table: every class, at its first answer
// and after the request's budgets for it are spent, before the first byte
// and after bytes reached the client. Each row states the whole action,
// so changing any rule fails exactly the rows that describe it.
func TestDecide(t *testing.T) {
	rows := decideRows()
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.name] {
			t.Fatalf("two rows named %q", r.name)
		}
		seen[r.name] = true
		got := Decide(cfg, r.a, r.v)
		if !reflect.DeepEqual(got, r.want) {
			t.Errorf("%s:\n got  %s\n want %s", r.name, show(got), show(r.want))
		}
	}
}

// TestDecideCapacityOff: with capacity_max = 0 the first overload is the
// client's to see.
func TestDecideCapacityOff(t *testing.T) {
	c := cfg
	c.CapacityMax = 0
	got := Decide(c, Attempt{Attempts: 1, Status: 529}, verdict(classify.Capacity, "", 0, 529))
	want := Action{Kind: Relay, Status: 529, Count: CountFailure}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %s, want %s", show(got), show(want))
	}
}

func TestAuthError(t *testing.T) {
	if got, want := AuthError(true, "dead"), (Action{Kind: Rotate, Park: &Park{Kind: api.ParkRelogin, Reason: "dead"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("relogin: got %s, want %s", show(got), show(want))
	}
	if got, want := AuthError(false, "keychain locked"), (Action{Kind: Rotate, Exclude: true}); !reflect.DeepEqual(got, want) {
		t.Errorf("other: got %s, want %s", show(got), show(want))
	}
}

// TestWhenUnavailable: what a request does when the pool has nothing for
// it now — the sole credential cooling briefly, every slot busy, a
// cooldown too long to wait, no credentials at all.
func TestWhenUnavailable(t *testing.T) {
	rows := []struct {
		name string
		w    Waited
		u    Unavailable
		want Action
	}{
		// Final: nothing changes by itself, so the client is told not to
		// retry (a dead sole key left Claude Code silent for a minute).
		{"no credentials is final", Waited{}, Unavailable{Why: "none"},
			Action{Kind: Exhausted, Status: http.StatusServiceUnavailable, Message: "none", Final: true}},
		{"sole credential cooling briefly waits for it", Waited{}, Unavailable{Total: 1, NextReady: 30 * time.Second, HasNext: true, Why: "cooling"},
			Action{Kind: WaitPool, Delay: 30 * time.Second}},
		{"a cooldown ending now waits its instant", Waited{}, Unavailable{Total: 1, HasNext: true, Why: "cooling"},
			Action{Kind: WaitPool, Delay: time.Millisecond}},
		{"waits already made count against the budget", Waited{Total: 100 * time.Second, Count: 1}, Unavailable{Total: 1, NextReady: 30 * time.Second, HasNext: true, Why: "cooling"},
			Action{Kind: Exhausted, Status: 429, RetryAfter: 30 * time.Second, Message: "cooling — too long to wait automatically (wait.sole_provider_max = 2m0s)"}},
		{"a cooldown longer than the budget is exhausted with retry-after", Waited{}, Unavailable{Total: 2, NextReady: 5 * time.Minute, HasNext: true, Why: "cooling"},
			Action{Kind: Exhausted, Status: 429, RetryAfter: 5 * time.Minute, Message: "cooling — too long to wait automatically (wait.sole_provider_max = 2m0s)"}},
		{"every slot busy waits for a release", Waited{}, Unavailable{Total: 1, Busy: 1, Why: "busy"},
			Action{Kind: WaitPool, Delay: 2 * time.Minute}},
		{"busy after the budget is spent is exhausted", Waited{Total: 2 * time.Minute}, Unavailable{Total: 1, Busy: 1, Why: "busy"},
			Action{Kind: Exhausted, Status: http.StatusServiceUnavailable, Message: "busy"}},
		{"parked or paused only is final", Waited{}, Unavailable{Total: 2, Why: "parked"},
			Action{Kind: Exhausted, Status: http.StatusServiceUnavailable, Message: "parked", Final: true}},
		{"too many waits is exhausted", Waited{Count: 1000}, Unavailable{Total: 1, NextReady: time.Second, HasNext: true, Why: "cooling"},
			Action{Kind: Exhausted, Status: 429, RetryAfter: time.Second, Message: "cooling"}},
	}
	for _, r := range rows {
		got := WhenUnavailable(cfg, r.w, r.u)
		if !reflect.DeepEqual(got, r.want) {
			t.Errorf("%s:\n got  %s\n want %s", r.name, show(got), show(r.want))
		}
	}
}

func TestCapacityBackoff(t *testing.T) {
	for n, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
		if got := CapacityBackoff(n, 0.999999999); got > want || got < want/2 {
			t.Errorf("n=%d: %v outside [%v, %v]", n, got, want/2, want)
		}
		if got := CapacityBackoff(n, 0); got != want/2 {
			t.Errorf("n=%d, no jitter: %v, want %v", n, got, want/2)
		}
	}
}

func show(a Action) string {
	s := a.Kind.String()
	if a.Delay != 0 {
		s += " delay=" + a.Delay.String()
	}
	if a.Status != 0 {
		s += " status=" + http.StatusText(a.Status)
	}
	if a.Message != "" {
		s += " msg=" + a.Message
	}
	if a.RetryAfter != 0 {
		s += " retry_after=" + a.RetryAfter.String()
	}
	if a.Cool != nil {
		s += " cool=" + string(a.Cool.Scope) + "/" + a.Cool.RetryAfter.String()
	}
	if a.Park != nil {
		s += " park=" + a.Park.Kind + "/" + a.Park.Model + "/" + a.Park.Reason
	}
	if a.Exclude {
		s += " exclude"
	}
	if a.Final {
		s += " final"
	}
	if a.BarTool {
		s += " bar_tool"
	}
	return s + " count=" + []string{"none", "success", "failure", "rate_limit"}[a.Count]
}
