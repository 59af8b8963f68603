package pool

import "time"

// outageProbeEvery is how often, while every credential of a provider is
// cooling on a guessed time, one request may go to a cooling credential to
// see whether the limit lifted. A 429 with no time of its own gets a
// ladder step (30 s, 60 s, 5 m), a guess; when every credential got one at
// once, the limit is most likely the provider's, and it ends when it ends,
// not when the guesses do. The bench's pool-wide bare 429 for 60 s saw its
// first success 32 s after the end with guesses alone; a probe every 2 s
// brings that under 2 s for one refused call per 2 s of outage.
const outageProbeEvery = 2 * time.Second

// guessed reports that e is a ladder step's cooldown: no upstream time
// behind it. A spent budget's is the upstream's own count.
func (e *cooldown) guessed() bool { return e.step > 0 && !e.budget }

// guessedOnly reports that everything cooling c for model is a guess.
// Requires p.mu.
func guessedOnly(c *cred, model string, now time.Time) bool {
	for _, e := range [...]*cooldown{c.prov.cool, c.cool, c.models[model], c.spentFor(model), c.modelHold(model, now)} {
		if active(e, now) && !e.guessed() {
			return false
		}
	}
	return true
}

// outageLocked reports that no credential of list can serve model for any
// reason but cooling, and every one cooling is cooling on guesses: the
// case where probing early pays. A credential that is usable or busy
// serves (or frees up) without a probe, and one cooling on an upstream
// time is never probed early, so either rules it out. Paused and parked
// credentials wait on a person and do not count. Requires p.mu.
func (p *Pool) outageLocked(list []*cred, model string, now time.Time) bool {
	cooling := false
	for _, c := range list {
		switch p.check(c, model, nil, now) {
		case blockPaused, blockParked:
		case blockCooling:
			if !guessedOnly(c, model, now) {
				return false
			}
			cooling = true
		default:
			return false
		}
	}
	return cooling
}

// outageProbe says, for a request that no credential can take, whether the
// provider is in a guessed outage (slot is then when its next probe may go)
// and, when that time has come, the credential to probe: the one whose
// guess ends soonest, the least recently used among equals, not excluded
// and not already probing. Requires p.mu.
func (p *Pool) outageProbe(req PickRequest, list []*cred, now time.Time) (slot time.Time, probe *cred) {
	pr := p.provs[req.Provider]
	if req.Provider == "" || pr == nil || !p.outageLocked(list, req.Model, now) {
		return time.Time{}, nil
	}
	slot = pr.probeAt.Add(outageProbeEvery)
	if now.Before(slot) {
		return slot, nil
	}
	var until time.Time
	for _, c := range list {
		if req.Exclude[c.ID] || p.check(c, req.Model, nil, now) != blockCooling || p.full(c, req.Model, now) {
			continue
		}
		// Exactly soonest, not "within a second, then least recently
		// used": spreading probes over the keys found refilled per-key
		// windows sooner in the bench's steady-silent (0.985 of the
		// oracle instead of 0.959) but each success then brought every
		// key back to be refused again: 5.0x amplification, not 1.7x.
		// Ends within the same millisecond are one instant: a burst's
		// 429s land nanoseconds apart, and which key probes must not
		// hang on that.
		u := longest(c, req.Model, now).until.Round(time.Millisecond)
		if probe == nil || u.Before(until) || (u.Equal(until) && c.seq < probe.seq) {
			probe, until = c, u
		}
	}
	return now, probe
}

// armSlot makes Changed's channel close at a provider's next probe slot,
// so a request refused for want of one wakes for it. One timer per
// provider. Requires p.mu; slot is after now.
func (p *Pool) armSlot(pr *provider, slot, now time.Time) {
	if pr.slotWake.timer != nil && pr.slotWake.at.Equal(slot) {
		return
	}
	pr.slotWake.arm(p, slot, now)
}

// endGuessed ends the guessed cooldowns that kept the probed credential c
// from model, and its provider's own, after c's probe during a guessed
// outage was answered 2xx. The answer speaks for c alone: another
// credential's guess stands (one refused just before the probe's answer
// came back is still refused, issue 24), and it comes back when its own
// guess ends or when it is probed in turn. Cooldowns on upstream times
// stand. Requires p.mu.
func (p *Pool) endGuessed(c *cred, model string, now time.Time, fx *effects) {
	end := func(k key, e *cooldown) {
		if !active(e, now) || !e.guessed() {
			return
		}
		e.timer.Stop()
		k.set(nil)
		fx.emit(k.ended(e, now))
		fx.changed, fx.wake = true, true
		p.settleReasons(k, e, now)
	}
	end(key{prov: c.prov}, c.prov.cool)
	end(key{cred: c}, c.cool)
	if model != "" {
		end(key{cred: c, model: model}, c.models[model])
	}
}

// settleReasons clears the reason a cooldown gave its credentials once it
// has ended and nothing else holds them back: a ready credential showing
// "429" misleads. A reason set by something else since stays. Requires
// p.mu.
func (p *Pool) settleReasons(k key, e *cooldown, now time.Time) {
	list := []*cred{k.cred}
	if k.prov != nil {
		list = k.prov.creds
	}
	for _, c := range list {
		if c.reason == e.reason && c.clearLocked(now) {
			c.reason = ""
		}
	}
}

// outageNote is the line Unavailable.Reasons carries while the provider
// waits for its next probe slot.
func outageNote(provider string, d time.Duration) string {
	return "every " + provider + " credential is cooling on a guessed time: the next probe goes in " + human(d)
}
