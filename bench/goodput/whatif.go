package goodput

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/pool"
)

// A Tweak is a proposed change to subpool's policy, played on the same
// real pool and classifier to measure what it would buy before anyone
// writes it into the proxy. The report shows these rows apart, as
// "what if"; no target is judged on them.
type Tweak struct {
	init func(s *subpool) any
	// hold returns the credentials to keep out of this pick (hard: they
	// count as busy, the request waits for a slot) and, optionally, the
	// ones to try first (prefer).
	hold func(s *subpool, model string) (hard, prefer map[string]bool)
	// leased sees every attempt's lease before the attempt is sent.
	leased func(s *subpool, l *pool.Lease)
	// answered sees every answer and its verdict before the loop acts,
	// and may change the verdict.
	answered func(s *subpool, l *pool.Lease, a answer, v *classify.Verdict)
}

// Proposal is a what-if strategy and the scenarios it is about.
type Proposal struct {
	Strategy
	Scenarios []string
}

// Proposals are the changes docs/benchmarks.md's findings propose.
func Proposals() []Proposal {
	return []Proposal{
		{Strategy{Name: "what-if: budget", Title: "the upstream's remaining-request count as a budget per key (and model), one probe after a cooldown",
			start: startSubpool(subpoolConfig{Tweak: budgetTweak()})},
			[]string{"steady-announced", "steady-silent", "outage", "mixed-models"}},
		{Strategy{Name: "what-if: soonest reset", Title: "among keys with headroom, the one whose window resets first",
			start: startSubpool(subpoolConfig{Tweak: soonestTweak()})},
			[]string{"steady-5h"}},
	}
}

func union(a, b map[string]bool) map[string]bool {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// budget is what a key's answers said about its request budget.
type budget struct {
	known bool
	left  int       // requests it can still take, counting those sent since
	reset time.Time // when the budget refills
	probe bool      // a cooldown ended: one request at a time until a success
	// sent holds the attempts on the key that have no answer yet, in the
	// order sent: an answer's remaining count does not include the ones
	// sent after it.
	sent []*pool.Lease
}

// budgetTweak: read anthropic-ratelimit-requests-remaining/-reset (or
// x-ratelimit-remaining-requests/-reset-requests) from every answer, and
// send a key no more requests than it has left; when the budget has
// refilled or a cooldown has ended, send one request (a probe) and wait
// for its answer before the rest.
func budgetTweak() *Tweak {
	// OpenAI's limits, and so its headers, are per model; Anthropic's
	// API-key request limit is per key.
	type key struct{ id, model string }
	type st struct{ b map[key]*budget }
	get := func(s *subpool, id, model string) *budget {
		if s.prov != "openai" {
			model = ""
		}
		m := s.state.(*st).b
		b := m[key{id, model}]
		if b == nil {
			b = &budget{}
			m[key{id, model}] = b
		}
		return b
	}
	return &Tweak{
		init: func(s *subpool) any { return &st{b: map[key]*budget{}} },
		hold: func(s *subpool, model string) (map[string]bool, map[string]bool) {
			now := s.e.w.Now()
			var hard map[string]bool
			for i := range s.e.sc.Creds {
				id := credID(i)
				b := get(s, id, model)
				full := false
				switch {
				case b.known && now.Before(b.reset):
					full = b.left <= 0
				case b.known, b.probe:
					// The budget refilled, or a cooldown ended: what is
					// left is unknown until one answer says.
					full = len(b.sent) >= 1
				}
				if full {
					if hard == nil {
						hard = map[string]bool{}
					}
					hard[id] = true
				}
			}
			return hard, nil
		},
		leased: func(s *subpool, l *pool.Lease) {
			b := get(s, l.Credential.ID, s.model[l])
			b.sent = append(b.sent, l)
			b.left--
		},
		answered: func(s *subpool, l *pool.Lease, a answer, v *classify.Verdict) {
			b := get(s, l.Credential.ID, s.model[l])
			i := slices.Index(b.sent, l)
			after := len(b.sent) - i - 1
			if i >= 0 {
				b.sent = slices.Delete(b.sent, i, i+1)
			}
			if n, reset, ok := remainingOf(a.resp.Header, s.e.w.Now()); ok {
				b.known, b.left, b.reset = true, n-after, reset
			} else if v.Class == classify.OK {
				b.known = false
			}
			switch v.Class {
			case classify.OK:
				b.probe = false
			case classify.RateLimit:
				b.probe, b.known = true, false
			}
		},
	}
}

// remainingOf reads the request budget an API answer reports.
func remainingOf(h http.Header, now time.Time) (int, time.Time, bool) {
	if v := h.Get("anthropic-ratelimit-requests-remaining"); v != "" {
		n, err := strconv.Atoi(v)
		t, err2 := time.Parse(time.RFC3339, h.Get("anthropic-ratelimit-requests-reset"))
		return n, t, err == nil && err2 == nil
	}
	if v := h.Get("x-ratelimit-remaining-requests"); v != "" {
		n, err := strconv.Atoi(v)
		d, err2 := time.ParseDuration(h.Get("x-ratelimit-reset-requests"))
		return n, now.Add(d), err == nil && err2 == nil
	}
	return 0, time.Time{}, false
}

// soonestTweak: among keys whose window still has room, try first the
// one whose five-hour window resets soonest: its quota is lost at the
// reset, the others' is not.
func soonestTweak() *Tweak {
	type seen struct {
		used  float64
		reset time.Time
	}
	type st struct{ u map[string]seen }
	get := func(s *subpool) *st { return s.state.(*st) }
	return &Tweak{
		init: func(s *subpool) any { return &st{u: map[string]seen{}} },
		hold: func(s *subpool, model string) (map[string]bool, map[string]bool) {
			now := s.e.w.Now()
			best, bestAt := "", time.Time{}
			for i := range s.e.sc.Creds {
				id := credID(i)
				u, ok := get(s).u[id]
				if !ok || !now.Before(u.reset) || u.used >= 1 {
					continue
				}
				if best == "" || u.reset.Before(bestAt) {
					best, bestAt = id, u.reset
				}
			}
			if best == "" {
				return nil, nil
			}
			return nil, map[string]bool{best: true}
		},
		answered: func(s *subpool, l *pool.Lease, a answer, v *classify.Verdict) {
			id := l.Credential.ID
			if u, ok := classify.ParseUtilization(a.resp.Header, s.e.w.Now()); ok && u.FiveHour != nil && u.FiveHour.ResetsAt != nil {
				get(s).u[id] = seen{used: u.FiveHour.Used, reset: *u.FiveHour.ResetsAt}
			}
		},
	}
}
