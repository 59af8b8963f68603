package pool

import (
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// budget is one (credential, model) pair's request budget as the
// upstream last reported it (anthropic-ratelimit-requests-*,
// x-ratelimit-*-requests), counted down by the leases taken since, and
// the leases it counts. OpenAI counts request limits per model and
// Anthropic's API keys per model class, so one model's spent budget must
// not hold back another on the same key. Without budgets, every request
// waiting for a window to reset is sent the moment it does, and all but
// the window's quota come back 429.
//
// The key is the request's model exactly as the client named it; "" is
// the key of requests that name none, and a report on one of those
// applies to them alone.
type budget struct {
	model string
	left  int       // requests the upstream still takes before reset, by our count
	reset time.Time // zero: no budget known
	// spent is how a spent budget shows: a model-scope cooldown in Status
	// and events, and to selection for this model. It is not in
	// cred.models, so that it neither climbs nor is mistaken for a 429's,
	// and is not kept in State: the first answer after a restart reports
	// the budget anew.
	spent *cooldown
	// inFlight counts the leases held for this model; unanswered, those of
	// them whose answer has not reported a budget: attempts a report that
	// arrives meanwhile may not include. Release caps unanswered at
	// inFlight, so an answer that reports nothing (a network error, a
	// bare 5xx) is not counted forever.
	inFlight, unanswered int
}

// refillGrace is how long after a spent budget's reset its probe is still
// owed when no request for the model has come. The requests that waited
// for the reset wake at it; once this has passed, none is left to
// stampede, and the budget is forgotten like one that had room.
const refillGrace = time.Minute

// spentAt reports whether the budget is used up before its reset.
func (b *budget) spentAt(now time.Time) bool {
	return b.left <= 0 && now.Before(b.reset)
}

// exhausted reports that b is spent, before its reset or after it
// (refilling): what makes it hold requests back at all.
func (b *budget) exhausted() bool {
	return !b.reset.IsZero() && b.left <= 0
}

// setBudget changes b's count and reset, keeping c.exhausted in step.
// Every change to either goes through it. Requires p.mu.
func (c *cred) setBudget(b *budget, left int, reset time.Time) {
	if b.exhausted() {
		c.exhausted--
	}
	b.left, b.reset = left, reset
	if b.exhausted() {
		c.exhausted++
	}
}

// refilling reports that a spent budget's reset has come and no answer
// has reported the new one: the window refilled by an amount nobody
// knows yet. A budget that was not spent at its reset is simply forgotten.
func (b *budget) refilling(now time.Time) bool {
	return !b.reset.IsZero() && b.left <= 0 && !now.Before(b.reset)
}

// stale reports that nothing about b matters any more: no lease counts on
// it, no cooldown shows, and its budget is unknown, over with room left,
// or spent with its reset more than refillGrace ago and no probe out.
func (b *budget) stale(now time.Time) bool {
	if b.inFlight > 0 || b.unanswered > 0 || b.spent != nil {
		return false
	}
	return b.reset.IsZero() || (b.left > 0 && !now.Before(b.reset)) || !now.Before(b.reset.Add(refillGrace))
}

// budgetFor returns c's budget entry for model, making it when there is
// none. A new entry first prunes the stale ones, so the map holds the
// models with a lease out or a budget that still matters, whatever names
// clients send. Requires p.mu.
func (p *Pool) budgetFor(c *cred, model string, now time.Time) *budget {
	if b := c.buds[model]; b != nil {
		return b
	}
	for m, b := range c.buds {
		if b.stale(now) {
			c.setBudget(b, 0, time.Time{})
			delete(c.buds, m)
		}
	}
	if c.buds == nil {
		c.buds = map[string]*budget{}
	}
	b := &budget{model: model}
	c.buds[model] = b
	return b
}

// spentFor is the cooldown a spent budget holds c under for model, or nil.
// A credential with no budget spent answers without a map lookup, which
// Pick makes once per credential. Requires p.mu.
func (c *cred) spentFor(model string) *cooldown {
	if c.exhausted == 0 {
		return nil
	}
	if b := c.buds[model]; b != nil {
		return b.spent
	}
	return nil
}

// SetBudget records the request budget an answer on credential id for
// model reported: remaining requests until reset. model is the one the
// answered attempt's lease was taken for ("" when the request named
// none). Call it at the answer's headers, while that lease is still held
// and before Confirm. The proxy does so for every answer but a rate-limit
// refusal, whose cooldown is already timed by the same reset.
//
// The report is authoritative when it arrives, minus the other attempts
// on (id, model) whose answers have not reported yet: the upstream may
// not have counted them in it. Every lease taken for model afterwards
// counts against it; leases for other models do not. While that count is
// ≤ 0 before reset, the credential is out of selection for model as if
// that model were cooling until reset (NextReady says so), without a
// ladder step: the upstream said so, nothing went wrong. When reset
// comes, one request for model goes first and the rest wait for an
// answer that reports the new budget (or for Confirm, should the
// upstream stop reporting), so the requests waiting for the reset do not
// all land on a window whose size nobody knows.
//
// A report whose reset has passed says nothing about the window the next
// request meets and changes no budget. Any report ends the credential's
// learned paces (pace.go): the upstream says its limit. Unknown ids are
// ignored.
func (p *Pool) SetBudget(id, model string, remaining int, reset time.Time) {
	p.update(id, func(c *cred, now time.Time, fx *effects) {
		b := p.budgetFor(c, model, now)
		// This answer is one of the unanswered attempts.
		b.unanswered = max(b.unanswered-1, 0)
		// The upstream counts for us: no pace need guess.
		p.forgetPaces(c, false)
		// The answer may end a probe after a reset, or say there is room.
		fx.wake = true
		if now.Before(reset) {
			c.setBudget(b, max(remaining, 0)-b.unanswered, reset)
			p.syncSpent(c, b, now, fx)
		}
	})
}

// countLease counts a lease taken at now against b (its budget only with
// spend). A spent budget whose probe is no longer owed (refillGrace) is
// forgotten first, so that the lease is an ordinary one. Requires p.mu.
func (p *Pool) countLease(c *cred, b *budget, now time.Time, spend bool, fx *effects) {
	if b.unanswered == 0 && b.refilling(now) && !now.Before(b.reset.Add(refillGrace)) {
		c.setBudget(b, 0, time.Time{})
	}
	b.inFlight++
	b.unanswered++
	// Past the reset the report describes a window that is over: counting
	// on would make a refilled window look spent.
	if spend && now.Before(b.reset) {
		c.setBudget(b, b.left-1, b.reset)
		if b.left <= 0 {
			p.syncSpent(c, b, now, fx)
		}
	}
}

// syncSpent makes b.spent, the cooldown Status and the events show for a
// spent budget, match b's count. One exhaustion is one cooldown_started
// and one cooldown_ended; a later report that moves the reset moves it
// without an event, since every answer in flight at the exhaustion
// reports one. Requires p.mu.
func (p *Pool) syncSpent(c *cred, b *budget, now time.Time, fx *effects) {
	spent := b.spentAt(now)
	if e := b.spent; e != nil && !(spent && active(e, now)) {
		e.timer.Stop()
		b.spent = nil
		fx.emit(spentEvent(api.EventCooldownEnded, c, e, now))
	}
	if !spent {
		return
	}
	if b.spent != nil {
		if b.spent.until.Equal(b.reset) {
			return
		}
		b.spent.timer.Stop()
		b.spent = p.armSpent(c, b, now)
		return
	}
	b.spent = p.armSpent(c, b, now)
	until := b.spent.until
	ev := spentEvent(api.EventCooldownStarted, c, b.spent, now)
	ev.Until = &until
	ev.Steps = len(p.lad.steps)
	fx.emit(ev)
}

// armSpent returns the cooldown for b's spent budget with the timer that
// announces its end live. b.reset is after now. Requires p.mu.
func (p *Pool) armSpent(c *cred, b *budget, now time.Time) *cooldown {
	e := &cooldown{scope: ScopeModel, model: b.model, until: b.reset, reason: spentReason(b.reset, now), budget: true}
	e.timer = p.clk.AfterFunc(max(e.until.Sub(now), 1), func() { p.endSpent(c, b, e) })
	return e
}

// endSpent runs at a spent budget's reset. The budget itself stays: it is
// what makes the first request after the reset a probe.
func (p *Pool) endSpent(c *cred, b *budget, e *cooldown) {
	p.mu.Lock()
	now := p.clk.Now()
	if b.spent != e || now.Before(e.until) || c.removed {
		p.mu.Unlock()
		return
	}
	b.spent = nil
	fx := effects{wake: true}
	fx.emit(spentEvent(api.EventCooldownEnded, c, e, now))
	p.unlock(&fx)
}

// forgetBudgets drops every budget of c (Reset), ending the cooldowns
// they show; the lease counts stay, since the leases are still out. It
// reports whether there was one. Requires p.mu.
func (p *Pool) forgetBudgets(c *cred, now time.Time, fx *effects) bool {
	had := false
	for _, m := range sortedKeys(c.buds) {
		b := c.buds[m]
		if b.reset.IsZero() && b.spent == nil {
			continue
		}
		had = true
		c.setBudget(b, 0, time.Time{})
		p.syncSpent(c, b, now, fx)
	}
	return had
}

func spentEvent(t api.EventType, c *cred, e *cooldown, now time.Time) api.Event {
	ev := event(t, c, now)
	ev.Scope = string(ScopeModel)
	ev.Model = e.model
	ev.Reason = e.reason
	ev.Budget = true
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
