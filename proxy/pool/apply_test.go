package pool

import (
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/policy"
)

// Apply keeps the books an action asks for, one row per part of it: the
// engine's attempt loop and the goodput simulator both rely on it.
func TestApply(t *testing.T) {
	transient := classify.Verdict{Class: classify.Transient, Reason: "502 bad gateway"}
	limited := classify.Verdict{Class: classify.RateLimit}
	cool := &policy.Cool{Scope: classify.ScopeCredential, RetryAfter: time.Minute}
	for _, c := range []struct {
		name       string
		act        policy.Action
		v          classify.Verdict
		reason     string // Apply's answer
		state      string
		shown      string // the credential's reason after
		requests   int64
		errors     int64
		rateLimits int64
	}{
		{"pass counts nothing yet", policy.Action{Kind: policy.Pass, Count: policy.CountSuccess}, classify.Verdict{Class: classify.OK}, "ok", api.StateReady, "", 0, 0, 0},
		{"a retry shows a failing upstream", policy.Action{Kind: policy.Retry, Count: policy.CountFailure}, transient, "502 bad gateway", api.StateReady, "502 bad gateway", 1, 1, 0},
		{"a rate limit cools and counts", policy.Action{Kind: policy.Rotate, Cool: cool, Count: policy.CountRateLimit}, limited, "rate_limit", api.StateCooling, "rate_limit", 1, 1, 1},
		{"a park", policy.Action{Kind: policy.Rotate, Park: &policy.Park{Kind: api.ParkRelogin, Reason: "expired"}}, classify.Verdict{Class: classify.AuthInvalid}, "auth_invalid", api.StateParked, "expired", 0, 0, 0},
		{"a tool bar without a tool is nothing", policy.Action{Kind: policy.Rotate, BarTool: true}, classify.Verdict{Class: classify.ClientError}, "client_error", api.StateReady, "", 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, Config{}, "a")
			if got := f.p.Apply("a", "m", "", c.act, c.v); got != c.reason {
				t.Errorf("reason %q, want %q", got, c.reason)
			}
			s := f.status("a")
			if s.State != c.state || s.Reason != c.shown {
				t.Errorf("state %q reason %q, want %q %q", s.State, s.Reason, c.state, c.shown)
			}
			if n := s.Counters; n.Requests != c.requests || n.Errors != c.errors || n.RateLimits != c.rateLimits {
				t.Errorf("counters %+v, want %d requests, %d errors, %d rate limits", n, c.requests, c.errors, c.rateLimits)
			}
		})
	}
}
