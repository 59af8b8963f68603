package pool

import (
	"fmt"
	"slices"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Park takes a credential (model "") or one model of it out of selection
// until the user acts. kind is api.ParkRelogin (always the whole
// credential: a login is not per model, so model is ignored) or
// api.ParkPayment (billing for model "", or a plan that lacks one model).
//
// Parks are not cooldowns: no time ends them and no ladder is involved,
// because waiting does not fix a revoked login or a missing plan (a
// ladder here re-probes a refusal forever). Unpark, Reset (payment only)
// or Remove end them.
//
// Parking again for the same kind and model only updates the reason, so
// the tray is prompted once: parked (and, for a login, relogin_required)
// go out only for a new park. Unknown ids are ignored.
func (p *Pool) Park(id, model, kind, reason string) {
	if kind == api.ParkRegion {
		p.parkRegion(id, reason)
		return
	}
	if kind == api.ParkRelogin {
		model = ""
	}
	p.update(id, func(c *cred, now time.Time, fx *effects) {
		if until, win, ok := p.planReset(c, now); ok && kind == api.ParkPayment && model == "" && c.Kind == api.KindOAuth {
			// A subscription refused for billing counts as spent for the plan
			// window it is in: a new window may serve again, and parking it
			// for good would wait on a person for what time fixes. (Claude's
			// "third-party apps now draw from your extra usage" is no billing
			// refusal of the login but of the tool: see BarTool.)
			p.coolUntil(key{cred: c}, until, fmt.Sprintf("%s (held until the %s window resets in %s)", reason, win, human(until.Sub(now))), now, fx)
			p.backAt(c, until, win)
			return
		}
		p.parkLocked(c, model, kind, reason, now, fx)
	})
}

// planReset is when c's plan window resets, when a subscription reported
// one still ahead. Requires p.mu.
func (p *Pool) planReset(c *cred, now time.Time) (time.Time, string, bool) {
	if c.usage == nil {
		return time.Time{}, "", false
	}
	w, ok := planBinding(c.usage.q)
	if !ok || w.ResetsAt == nil || !now.Before(*w.ResetsAt) {
		return time.Time{}, "", false
	}
	return *w.ResetsAt, w.Name, true
}

// parkLocked is Park on c under p.mu; it reports whether the park is new.
func (p *Pool) parkLocked(c *cred, model, kind, reason string, now time.Time, fx *effects) bool {
	c.reason = reason
	i := slices.IndexFunc(c.parks, func(pk api.Park) bool { return pk.Kind == kind && pk.Model == model })
	if i >= 0 {
		if c.parks[i].Reason != reason {
			c.parks[i].Reason = reason
			fx.changed = true
		}
		return false
	}
	c.parks = append(c.parks, api.Park{Kind: kind, Model: model, Reason: reason, Since: now})
	fx.changed = true
	e := event(api.EventParked, c, now)
	e.Kind, e.Model, e.Reason, e.State = kind, model, reason, c.state(now)
	fx.emit(e)
	if kind == api.ParkRelogin {
		e := event(api.EventReloginRequired, c, now)
		e.Reason = reason
		fx.emit(e)
	}
	return true
}

// Unpark clears the parks of a credential of the given kinds, or all of
// them when none is given: after a successful re-login, when the user says
// billing is sorted, or (ParkRelogin alone) when a CLI's login it was
// imported from is good again. It emits credential_updated when there was
// anything to clear.
func (p *Pool) Unpark(id string, kinds ...string) {
	p.mu.Lock()
	c := p.byID[id]
	if c == nil || len(c.parks) == 0 {
		p.mu.Unlock()
		return
	}
	n := len(c.parks)
	c.parks = slices.DeleteFunc(c.parks, func(pk api.Park) bool { return len(kinds) == 0 || slices.Contains(kinds, pk.Kind) })
	if len(c.parks) == n {
		p.mu.Unlock()
		return
	}
	now := p.clk.Now()
	c.reason = ""
	if len(c.parks) > 0 {
		c.reason = c.parks[len(c.parks)-1].Reason
	}
	fx := effects{changed: true, wake: true}
	e := event(api.EventCredentialUpdated, c, now)
	e.State = c.state(now)
	e.Reason = "unparked"
	fx.emit(e)
	p.unlock(&fx)
}

// parkedAll reports whether the whole credential is parked.
func (c *cred) parkedAll() bool {
	for i := range c.parks {
		if c.parks[i].Model == "" {
			return true
		}
	}
	return false
}

// parkFor returns the park that keeps c out for model (a whole-credential
// park first), or nil.
func (c *cred) parkFor(model string) *api.Park {
	var hit *api.Park
	for i := range c.parks {
		pk := &c.parks[i]
		switch {
		case pk.Model == "" && (hit == nil || hit.Model != "" || pk.Kind == api.ParkRelogin):
			hit = pk
		case pk.Model != "" && pk.Model == model && hit == nil:
			hit = pk
		}
	}
	return hit
}
