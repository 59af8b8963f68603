package pool

import (
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// budget is the request budget an upstream last reported for a
// credential (anthropic-ratelimit-requests-*, x-ratelimit-*-requests),
// counted down by the leases taken since. Without it, every request
// waiting for a credential's window to reset is sent the moment it does,
// and all but the window's quota come back 429.
type budget struct {
	left  int       // requests the upstream still takes before reset, by our count
	reset time.Time // zero: no budget known
}

// spentAt reports whether the budget is used up before its reset.
func (b budget) spentAt(now time.Time) bool {
	return b.left <= 0 && now.Before(b.reset)
}

// refilling reports that a spent budget's reset has come and no answer
// has reported the new one: the window refilled by an amount nobody
// knows yet. A budget that was not spent at its reset is simply forgotten.
func (c *cred) refilling(now time.Time) bool {
	return !c.bud.reset.IsZero() && c.bud.left <= 0 && !now.Before(c.bud.reset)
}

// SetBudget records the request budget an answer on credential id
// reported: remaining requests until reset. Call it at the answer's
// headers, while the answered attempt's lease is still held and before
// Confirm. The proxy does so for every answer but a rate-limit refusal,
// whose cooldown is already timed by the same reset.
//
// The report is authoritative when it arrives, minus the other attempts
// on id whose answers have not reported yet: the upstream may not have
// counted them in it. Every lease taken afterwards counts against it.
// While that count is ≤ 0 before reset, the credential is out of
// selection as if cooling until reset (NextReady says so), without a
// ladder step: the upstream said so, nothing went wrong. When reset
// comes, one request goes first and the rest wait for an answer that
// reports the new budget (or for Confirm, should the upstream stop
// reporting), so the requests waiting for the reset do not all land on
// a window whose size nobody knows.
//
// A report whose reset has passed says nothing about the window the next
// request meets and changes no budget. Unknown ids are ignored.
func (p *Pool) SetBudget(id string, remaining int, reset time.Time) {
	p.mu.Lock()
	c := p.byID[id]
	if c == nil {
		p.mu.Unlock()
		return
	}
	now := p.clk.Now()
	// This answer is one of the unanswered attempts.
	c.unanswered = max(c.unanswered-1, 0)
	var fx effects
	if now.Before(reset) {
		c.bud = budget{left: max(remaining, 0) - c.unanswered, reset: reset}
		p.syncSpent(c, now, &fx)
	}
	p.unlock(&fx)
}

// syncSpent makes c.spent, the cooldown Status and the events show for a
// spent budget, match c.bud. One exhaustion is one cooldown_started and
// one cooldown_ended; a later report that moves the reset moves it
// without an event, since every answer in flight at the exhaustion
// reports one. Requires p.mu.
func (p *Pool) syncSpent(c *cred, now time.Time, fx *effects) {
	spent := c.bud.spentAt(now)
	if e := c.spent; e != nil && !(spent && active(e, now)) {
		e.timer.Stop()
		c.spent = nil
		fx.emit(spentEvent(api.EventCooldownEnded, c, e, now))
	}
	if !spent {
		return
	}
	if c.spent != nil {
		if c.spent.until.Equal(c.bud.reset) {
			return
		}
		c.spent.timer.Stop()
		c.spent = p.armSpent(c, now)
		return
	}
	c.spent = p.armSpent(c, now)
	until := c.spent.until
	ev := spentEvent(api.EventCooldownStarted, c, c.spent, now)
	ev.Until = &until
	ev.Steps = len(p.lad.steps)
	fx.emit(ev)
}

// armSpent returns the cooldown for c's spent budget with the timer that
// announces its end live. c.bud.reset is after now. Requires p.mu.
func (p *Pool) armSpent(c *cred, now time.Time) *cooldown {
	e := &cooldown{scope: ScopeCredential, until: c.bud.reset, reason: spentReason(c.bud.reset, now)}
	e.timer = p.clk.AfterFunc(max(e.until.Sub(now), 1), func() { p.endSpent(c, e) })
	return e
}

// endSpent runs at a spent budget's reset. The budget itself stays: it is
// what makes the first request after the reset a probe.
func (p *Pool) endSpent(c *cred, e *cooldown) {
	p.mu.Lock()
	now := p.clk.Now()
	if c.spent != e || now.Before(e.until) || c.removed {
		p.mu.Unlock()
		return
	}
	c.spent = nil
	var fx effects
	fx.emit(spentEvent(api.EventCooldownEnded, c, e, now))
	p.unlock(&fx)
}

func spentEvent(t api.EventType, c *cred, e *cooldown, now time.Time) api.Event {
	ev := event(t, c, now)
	ev.Scope = string(ScopeCredential)
	ev.Reason = e.reason
	return ev
}

// spentReason names the reset in the clock's own zone: the local one for
// a person, UTC in tests.
func spentReason(reset, now time.Time) string {
	layout := "15:04:05"
	if reset.Sub(now) >= 24*time.Hour {
		layout = "Jan 2 15:04"
	}
	return "budget spent (0 requests left until " + reset.In(now.Location()).Format(layout) + ")"
}
