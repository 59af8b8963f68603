package pool

import (
	"slices"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// pace_changed tells a listener each credential's paces as status lists
// them (paceStatus), whenever that list changes: a pace learned, its
// window or count moved, a next request held back, or the pace forgotten.
// A next time that merely passes is no news, since a listener sees it
// pass. So it goes out at a window's turns (spent, refilled, refused),
// not per request.
//
// The pool drops a quiet pace only when asked (pace.go), so paceQuiet
// wakes when the earliest pace shown would go quiet, and the forgetting
// is told then.

// paceQuiet is the one timer that tells paces forgotten after a quiet
// spell. Its fields are guarded by p.mu.
type paceQuiet struct {
	at    time.Time
	timer clock.Timer
}

// paceNews emits pace_changed for c, or for every credential of its
// provider when the provider's pace is or was on them, where the paces
// status would show differ from those last sent. Requires p.mu.
func (p *Pool) paceNews(c *cred, now time.Time, fx *effects) {
	if c.removed {
		return
	}
	pr := c.prov
	if pr.pace == nil && !pr.paceShown {
		p.paceNewsOf(c, now, fx)
		return
	}
	for _, x := range pr.creds {
		p.paceNewsOf(x, now, fx)
	}
	pr.paceShown = pr.pace != nil
}

// paceNewsOf emits pace_changed for c alone if its paces changed since
// the last sent. Requires p.mu.
func (p *Pool) paceNewsOf(c *cred, now time.Time, fx *effects) {
	if len(c.pacesShown) == 0 && c.prov.pace == nil && len(c.paces) == 0 {
		return
	}
	cur := p.paceStatus(c, now)
	if samePaces(c.pacesShown, cur, now) {
		return
	}
	c.pacesShown = cur
	e := event(api.EventPaceChanged, c, now)
	e.Paces = slices.Clone(cur)
	fx.emit(e)
	p.armPaceQuiet(c, now)
}

// samePaces reports that cur shows what shown did at now: a next time in
// shown that has passed counts as none.
func samePaces(shown, cur []api.Pace, now time.Time) bool {
	return slices.EqualFunc(shown, cur, func(a, b api.Pace) bool {
		an, bn := a.Next, b.Next
		if an != nil && !an.After(now) {
			an = nil
		}
		if (an == nil) != (bn == nil) || an != nil && !an.Equal(*bn) {
			return false
		}
		a.Next, b.Next = nil, nil
		return a == b
	})
}

// quietAt is the first instant at which a live pace on c is quiet, zero
// when none is live. Requires p.mu.
func (p *Pool) quietAt(c *cred, now time.Time) time.Time {
	quiet := p.quietSince(now)
	var used time.Time
	note := func(pc *pacer) {
		if pc != nil && !pc.used.Before(quiet) && (used.IsZero() || pc.used.Before(used)) {
			used = pc.used
		}
	}
	note(c.prov.pace)
	for _, pc := range c.paces {
		note(pc)
	}
	if used.IsZero() {
		return time.Time{}
	}
	// A pace is quiet once its last lease is more than ResetAfter old.
	return used.Add(p.cfg.ResetAfter + 1)
}

// armPaceQuiet makes paceQuiet fire by the time c's first live pace goes
// quiet. Requires p.mu.
func (p *Pool) armPaceQuiet(c *cred, now time.Time) {
	at := p.quietAt(c, now)
	q := &p.paceQuiet
	if at.IsZero() || q.timer != nil && !q.at.After(at) {
		return
	}
	if q.timer != nil {
		q.timer.Stop()
	}
	q.at = at
	q.timer = p.clk.AfterFunc(max(at.Sub(now), 1), func() { p.paceQuietFired(at) })
}

// paceQuietFired tells the paces that went quiet by now, and arms the
// timer again for those still live.
func (p *Pool) paceQuietFired(at time.Time) {
	p.mu.Lock()
	if !p.paceQuiet.at.Equal(at) {
		p.mu.Unlock()
		return
	}
	p.paceQuiet.timer = nil
	now := p.clk.Now()
	var fx effects
	for _, c := range p.creds {
		if len(c.pacesShown) > 0 {
			p.paceNewsOf(c, now, &fx)
			p.armPaceQuiet(c, now)
		}
	}
	p.unlock(&fx)
}
