package pool

import (
	"fmt"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// What selection, status and the headers see of the paces (pace.go).

func (k key) pacer() *pacer {
	if k.prov != nil {
		return k.prov.pace
	}
	return k.cred.paces[k.model]
}

func (k key) setPacer(pc *pacer) {
	switch {
	case k.prov != nil:
		k.prov.pace = pc
	case pc == nil:
		delete(k.cred.paces, k.model)
	default:
		if k.cred.paces == nil {
			k.cred.paces = map[string]*pacer{}
		}
		k.cred.paces[k.model] = pc
	}
}

// meter is the successes a new pace on k starts from; a model's starts
// from its credential's.
func (k key) meter() *meter {
	if k.prov != nil {
		return &k.prov.met
	}
	return &k.cred.met
}

// quietSince is the instant before which a key's last request makes it
// quiet at now: reset_after, as for the ladder.
func (p *Pool) quietSince(now time.Time) time.Time { return now.Add(-p.cfg.ResetAfter) }

// pruneQuiet drops c's paces quiet since before quiet, so that a
// credential asked for many models does not grow. Requires p.mu.
func (p *Pool) pruneQuiet(c *cred, quiet time.Time) {
	for m, pc := range c.paces {
		if pc.used.Before(quiet) {
			delete(c.paces, m)
		}
	}
}

// pacers calls f with each live pace that applies to c for model: its
// provider's, its own and model's. Requires p.mu.
func (p *Pool) pacers(c *cred, model string, now time.Time, f func(pc *pacer)) {
	quiet := p.quietSince(now)
	if pc := c.prov.pace; pc != nil && !pc.used.Before(quiet) {
		f(pc)
	}
	if len(c.paces) == 0 {
		return
	}
	if pc := c.paces[""]; pc != nil && !pc.used.Before(quiet) {
		f(pc)
	}
	if model == "" {
		return
	}
	if pc := c.paces[model]; pc != nil && !pc.used.Before(quiet) {
		f(pc)
	}
}

// paced reports that a pace holds c for model now. Requires p.mu.
func (p *Pool) paced(c *cred, model string, now time.Time) bool {
	u, _ := p.pacedUntil(c, model, now)
	return !u.IsZero()
}

// pacedUntil is when the paces on c let its next request for model go,
// and the pace that holds it longest; zero when one may go now. Requires
// p.mu.
func (p *Pool) pacedUntil(c *cred, model string, now time.Time) (until time.Time, by *pacer) {
	if c.prov.pace == nil && len(c.paces) == 0 {
		return time.Time{}, nil
	}
	p.pacers(c, model, now, func(pc *pacer) {
		if u := pc.heldUntil(now); u.After(until) {
			until, by = u, pc
		}
	})
	return until, by
}

// paceAlone reports that a pace on c for model lets only one request go
// at a time now (pacer.alone). Requires p.mu.
func (p *Pool) paceAlone(c *cred, model string, now time.Time) bool {
	if c.prov.pace == nil && len(c.paces) == 0 {
		return false
	}
	alone := false
	p.pacers(c, model, now, func(pc *pacer) { alone = alone || pc.alone() })
	return alone
}

// forgetPaces drops every pace of c (and, with prov, its provider's): an
// answer's headers said what the limits are. It reports whether there
// was one. Requires p.mu.
func (p *Pool) forgetPaces(c *cred, prov bool) bool {
	had := len(c.paces) > 0
	c.paces = nil
	if prov && c.prov.pace != nil {
		c.prov.pace = nil
		had = true
	}
	return had
}

// armPace makes Changed's channel close at the earliest time a paced
// credential of list may go for model, so a request refused for want of
// one wakes for it. One timer for the pool. Requires p.mu.
func (p *Pool) armPace(list []*cred, model string, now time.Time) {
	var at time.Time
	for _, c := range list {
		if u, _ := p.pacedUntil(c, model, now); !u.IsZero() && (at.IsZero() || u.Before(at)) {
			at = u
		}
	}
	if at.IsZero() {
		return
	}
	if w := &p.paceWake; w.timer != nil && !at.Before(w.at) && now.Before(w.at) {
		return // an earlier wake-up is armed
	}
	p.paceWake.arm(p, at, now)
}

// paceWords says why a paced credential waits, for Unavailable.Reasons.
func paceWords(pc *pacer, d time.Duration) string {
	s := "paced: next request in " + human(d)
	if pc.scope == ScopeModel && pc.model != "" {
		s += " for " + pc.model
	}
	if pc.period > 0 {
		return s + fmt.Sprintf(" (learned from 429s that named no reset time: %d requests per %s)", pc.n, human(pc.period))
	}
	return s + " (refused by 429s that named no reset time)"
}

// paceStatus lists the live paces on c, its provider's first, for Status.
// Requires p.mu.
func (p *Pool) paceStatus(c *cred, now time.Time) []api.Pace {
	quiet := p.quietSince(now)
	var out []api.Pace
	add := func(pc *pacer) {
		if pc == nil || pc.used.Before(quiet) {
			return
		}
		ps := api.Pace{Scope: string(pc.scope), Model: pc.model, Requests: pc.n, WindowMS: pc.period.Milliseconds()}
		if at := pc.heldUntil(now); !at.IsZero() {
			ps.Next = &at
		}
		out = append(out, ps)
	}
	add(c.prov.pace)
	for _, m := range sortedKeys(c.paces) {
		add(c.paces[m])
	}
	return out
}
