package pool

import (
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// ladder is the stepped cooldown as data: how long each successive hit on a
// key cools it, and how long a key must stay quiet to start over.
type ladder struct {
	steps      []time.Duration // never empty, every step > 0
	resetAfter time.Duration
}

// ladderMem is what one key remembers between hits.
type ladderMem struct {
	hits int       // hits that climbed, since the ladder last started over
	last time.Time // the last of those hits
}

// hit is what one rate-limit hit does to a key.
type hit struct {
	until time.Time
	step  int // 1-based ladder step; 0 when the time came from the upstream
	mem   ladderMem
	kept  bool // the key's current cooldown stands unchanged
	// extended: the key was cooling and a later upstream time moves its
	// end by at least extendMin.
	extended bool
}

// extendMin is how much later an upstream time must reach than the
// cooldown already running before it counts as news. Concurrent requests
// refused by one limit carry one reset instant, but read at slightly
// different moments and, as retry-after, in whole seconds: their ends
// scatter over up to a second. Under a second is one refusal seen twice
// (the cooldown stands, and the probe after it finds out); a second or
// more is the upstream naming a later time.
const extendMin = time.Second

// advance computes the outcome of a rate-limit hit at now on a key whose
// active cooldown is cur (nil or expired when none) and whose memory is
// mem, without changing either.
//
// A hit on a key that is still cooling is the same event as the one that
// cooled it: Pick never hands out a cooling key, so the request was sent
// before the cooldown began (a burst of concurrent requests all answered
// 429 together). It neither climbs the ladder (or three parallel requests
// would buy 5 minutes at once) nor shortens the cooldown; only an upstream
// time reaching at least extendMin further extends it.
//
// A fresh hit climbs: step n+1 if the last hit was less than resetAfter
// ago, else step 1. An upstream time (retryAfter > 0) replaces the step's
// duration, whether shorter or longer, and is never capped: a long
// Retry-After means it. The hit still counts, so a key that keeps being
// refused climbs even while the upstream names the times.
func (l ladder) advance(cur *cooldown, mem ladderMem, now time.Time, retryAfter time.Duration) hit {
	if active(cur, now) {
		if retryAfter > 0 && now.Add(retryAfter).Sub(cur.until) >= extendMin {
			return hit{until: now.Add(retryAfter), mem: mem, extended: true}
		}
		return hit{until: cur.until, step: cur.step, mem: mem, kept: true}
	}
	n := 1
	if mem.hits > 0 && now.Sub(mem.last) < l.resetAfter {
		n = mem.hits + 1
	}
	mem = ladderMem{hits: n, last: now}
	if retryAfter > 0 {
		return hit{until: now.Add(retryAfter), mem: mem}
	}
	i := min(n, len(l.steps)) - 1
	return hit{until: now.Add(l.steps[i]), step: i + 1, mem: mem}
}

// forgotten reports whether mem no longer affects the next hit.
func (l ladder) forgotten(mem ladderMem, now time.Time) bool {
	return mem.hits == 0 || now.Sub(mem.last) >= l.resetAfter
}

// cooldown is one active cooldown on one key.
type cooldown struct {
	scope  Scope
	model  string
	until  time.Time
	step   int
	reason string
	budget bool        // a spent request budget's (budget.go), not a 429's
	timer  clock.Timer // fires end at until
	// window names the quota window the cooldown waits on ("5h", "7d"),
	// when one is known: a report showing it has room ends the cooldown
	// early (heal.go). "" for a bare 429, which no window explains.
	window string
}

// active reports whether e holds at now. A cooldown whose time has come is
// over even if its timer has not fired yet: the next request probes it.
func active(e *cooldown, now time.Time) bool { return e != nil && now.Before(e.until) }

func (e *cooldown) api(steps int) api.Cooldown {
	return api.Cooldown{Scope: string(e.scope), Model: e.model, Until: e.until, Step: e.step, Steps: steps, Reason: e.reason, Budget: e.budget}
}

// key names where a cooldown lives: exactly one of prov (provider scope)
// or cred (credential scope, or model scope when model is set).
type key struct {
	prov  *provider
	cred  *cred
	model string
}

func (k key) scope() Scope {
	switch {
	case k.prov != nil:
		return ScopeProvider
	case k.model != "":
		return ScopeModel
	}
	return ScopeCredential
}

func (k key) get() *cooldown {
	switch {
	case k.prov != nil:
		return k.prov.cool
	case k.model != "":
		return k.cred.models[k.model]
	}
	return k.cred.cool
}

// set installs e, or removes the key's cooldown when e is nil.
func (k key) set(e *cooldown) {
	switch {
	case k.prov != nil:
		k.prov.cool = e
	case k.model != "" && e == nil:
		delete(k.cred.models, k.model)
	case k.model != "":
		if k.cred.models == nil {
			k.cred.models = map[string]*cooldown{}
		}
		k.cred.models[k.model] = e
	default:
		k.cred.cool = e
	}
}

func (k key) memory() ladderMem {
	if k.prov != nil {
		return k.prov.ladder
	}
	return k.cred.ladders[k.model]
}

func (k key) setMemory(m ladderMem) {
	if k.prov != nil {
		k.prov.ladder = m
		return
	}
	if k.cred.ladders == nil {
		k.cred.ladders = map[string]ladderMem{}
	}
	k.cred.ladders[k.model] = m
}

// base is an event about the key: provider-wide ones name no credential.
func (k key) base(t api.EventType, now time.Time) api.Event {
	if k.prov != nil {
		return api.Event{Type: t, Time: now, Provider: k.prov.name, Scope: string(ScopeProvider)}
	}
	e := event(t, k.cred, now)
	e.Scope = string(k.scope())
	e.Model = k.model
	return e
}

func (k key) ended(e *cooldown, now time.Time) api.Event {
	ev := k.base(api.EventCooldownEnded, now)
	ev.Reason = e.reason
	return ev
}

// install makes e the key's cooldown, replacing (and stopping) any other,
// and arms the timer that ends it. Requires p.mu.
func (p *Pool) install(k key, e *cooldown, now time.Time) {
	if old := k.get(); old != nil {
		old.timer.Stop()
	}
	k.set(e)
	// until is always after now here, so the timer never fires inside
	// AfterFunc (a clock.Fake fires due timers synchronously, and this
	// goroutine holds p.mu).
	d := max(e.until.Sub(now), 1)
	e.timer = p.clk.AfterFunc(d, func() { p.end(k, e) })
}

// end runs when e's timer fires: if e is still the key's cooldown, it is
// removed and cooldown_ended goes out live, so the tray turns the
// credential green without waiting for a request.
func (p *Pool) end(k key, e *cooldown) {
	p.mu.Lock()
	now := p.clk.Now()
	// Replaced, reset or removed meanwhile: the newer state has its own
	// timer, or none is needed.
	if k.get() != e || now.Before(e.until) || (k.cred != nil && k.cred.removed) {
		p.mu.Unlock()
		return
	}
	k.set(nil)
	fx := effects{changed: true, wake: true}
	fx.emit(k.ended(e, now))
	p.settleReasons(k, e, now)
	p.unlock(&fx)
}

// CooldownResult is what a rate-limit hit did.
type CooldownResult struct {
	Until time.Time
	// Step is the 1-based ladder step, 0 when the time came from the
	// upstream; Steps is the ladder's length.
	Step, Steps int
	// Scope is the scope actually cooled: a credential-scoped hit on an
	// egress provider cools the provider.
	Scope Scope
	// Exactly one of Started, Extended, Kept and Paced is set for a known
	// id. Started: the key was not cooling and now is (cooldown_started).
	// Extended: it was cooling and an upstream time moved the end later
	// by at least a second (cooldown_extended). Kept: it was already
	// cooling about as long or longer, and that cooldown stands
	// unchanged (no event): a concurrent refusal confirming it. Paced: a
	// silent 429 that the key's learned window takes (pace.go: a miss, a
	// refusal in the short waits after one, or a request sent before
	// either): the key waits for its pace until Until, with no cooldown,
	// no ladder step and no event.
	Started, Extended, Kept, Paced bool
}

// CoolDown records a rate-limit hit on credential id.
//
// scope is where the limit applies: ScopeCredential, ScopeModel (model
// names the model; an empty model means the credential) or ScopeProvider
// (every credential of id's provider, one shared entry). On a provider
// declared LimitEgress, a credential-scoped hit is taken as provider-wide;
// model-scoped hits stay on the (credential, model) pair. Any other scope
// string is taken as ScopeCredential.
//
// retryAfter > 0 is the upstream's own time and replaces the ladder's
// step; the hit still counts toward the ladder, and the reported Step is
// 0. It also ends the credential's learned paces (its provider's too, for
// a provider-wide hit). retryAfter 0 is a silent 429: on a key whose
// learned window takes it (pace.go) it waits for the pace instead of
// climbing (Paced); otherwise it climbs, and a key that served before and
// has no pace starts one. A cooldown is never shortened, and a hit on a key already cooling
// does not climb (see ladder.advance). reason is kept with the cooldown
// and as the credential's last reason.
//
// Concurrent refusals for one key announce one cooldown: cooldown_started
// when it starts, cooldown_extended (same fields) only when an upstream
// time moves its end later by a second or more (extendMin), nothing when
// the hit confirms it. An unknown id does nothing and returns the zero
// result.
func (p *Pool) CoolDown(id, model string, scope Scope, retryAfter time.Duration, reason string) CooldownResult {
	var res CooldownResult
	p.update(id, func(c *cred, now time.Time, fx *effects) {
		var k key
		switch {
		case scope == ScopeModel && model != "":
			k = key{cred: c, model: model}
		case scope == ScopeProvider || c.prov.egress:
			k = key{prov: c.prov}
		default:
			k = key{cred: c}
		}
		c.reason = reason
		// A refusal tells as much as an outage probe would (outage.go): the
		// next one is due outageProbeEvery after the latest of either.
		c.prov.probeAt = now
		cur := k.get()
		if retryAfter > 0 {
			// The upstream names its time: nothing is left to guess.
			p.forgetPaces(c, k.prov != nil)
		}
		fresh := retryAfter == 0 && !active(cur, now)
		if fresh {
			if until, held := p.paceSilent(c, k, now); held {
				res = CooldownResult{Until: until, Steps: len(p.lad.steps), Scope: k.scope(), Paced: true}
				return
			}
		}
		h := p.lad.advance(cur, k.memory(), now, retryAfter)
		if fresh {
			paceCooled(k, h.until.Sub(now))
		}
		res = CooldownResult{Until: h.until, Step: h.step, Steps: len(p.lad.steps), Scope: k.scope(),
			Started: !h.kept && !h.extended, Extended: h.extended, Kept: h.kept}
		if h.kept {
			return
		}
		k.setMemory(h.mem)
		if k.prov == nil {
			p.pruneLadders(c, now)
		}
		e := &cooldown{scope: k.scope(), model: k.model, until: h.until, step: h.step, reason: reason}
		if k.prov == nil {
			e.window = c.waitsOn(h.until, now)
		}
		p.install(k, e, now)
		// Whatever the cooldown covers comes back as one probe: when it ends,
		// a single request finds out whether the limit really lifted before
		// every waiting request piles onto the credential.
		if k.prov != nil {
			for _, pc := range k.prov.creds {
				pc.probe = true
			}
		} else {
			c.probe = true
		}
		typ := api.EventCooldownStarted
		if h.extended {
			typ = api.EventCooldownExtended
		}
		ev := k.base(typ, now)
		until := h.until
		ev.Until = &until
		ev.Step = h.step
		ev.Steps = res.Steps
		ev.Reason = reason
		fx.emit(ev)
		fx.changed = true
	})
	return res
}

// pruneLadders drops the ladder memories of c that no longer matter, so
// a credential asked for many models over months does not grow without
// bound. Requires p.mu.
func (p *Pool) pruneLadders(c *cred, now time.Time) {
	for m, mem := range c.ladders {
		if p.lad.forgotten(mem, now) {
			delete(c.ladders, m)
		}
	}
}

// ProviderCooldown returns the provider-wide cooldown while one holds.
func (p *Pool) ProviderCooldown(provider string) *api.Cooldown {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.provs[provider]
	if pr == nil || !active(pr.cool, p.clk.Now()) {
		return nil
	}
	c := pr.cool.api(len(p.lad.steps))
	return &c
}
