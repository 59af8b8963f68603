package pool

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Cooldowns that heal. A cooldown that waits on a quota window (spent
// until its reset, from an answer's headers or a usage poll) need not
// outlive the limit: upstreams reset windows early, and a later report
// (the next poll, another answer) that shows the window with room again
// ends the cooldown then, with a cooldown_ended that says why. A cooldown
// no window explains (a bare 429, a ladder step) is left to its time: a
// window with room says nothing about a limit it did not name.

// waitsOnSlack is how far a 429's time may lie from a spent window's
// reset for the 429 to count as that window's: the headers and the body
// of one answer round the same reset differently.
const waitsOnSlack = time.Minute

// waitsOn names the window the last report of c shows spent until about
// until, the window a cooldown ending then waits on; "" when none does.
// Requires p.mu.
func (c *cred) waitsOn(until, now time.Time) string {
	if c.usage == nil || now.Sub(c.usage.at) > usageEvery {
		return ""
	}
	for _, w := range c.usage.q.Windows {
		if spent(w) && w.ResetsAt != nil && math.Abs(float64(w.ResetsAt.Sub(until))) <= float64(waitsOnSlack) {
			return w.Name
		}
	}
	return ""
}

// startedOver reports whether q shows the window a cooldown until until
// waits on reset early: the window reported with room (not rejected, not
// full) and another reset than the one waited for. A window the report
// leaves out, or one with room but the same reset (an upstream wavering
// at the edge of full), tells nothing.
func startedOver(q api.Quota, e *cooldown) (api.QuotaWindow, bool) {
	i := slices.IndexFunc(q.Windows, func(w api.QuotaWindow) bool { return w.Name == e.window })
	if i < 0 {
		return api.QuotaWindow{}, false
	}
	w := q.Windows[i]
	if spent(w) || w.Used >= 1 || w.ResetsAt == nil || math.Abs(float64(w.ResetsAt.Sub(e.until))) <= float64(waitsOnSlack) {
		return api.QuotaWindow{}, false
	}
	return w, true
}

// heal ends every cooldown of c that waits on a window c.usage.q shows
// with room, and reports whether one ended. Requires p.mu.
func (p *Pool) heal(c *cred, now time.Time, fx *effects) bool {
	q := c.usage.q
	healed := false
	keys := []key{{cred: c}}
	for _, m := range sortedKeys(c.models) {
		keys = append(keys, key{cred: c, model: m})
	}
	for _, k := range keys {
		e := k.get()
		if !active(e, now) || e.window == "" {
			continue
		}
		if w, ok := startedOver(q, e); ok {
			e.timer.Stop()
			k.set(nil)
			p.healed(k, e, w, now, fx)
			healed = true
		}
	}
	u := c.usage
	var ended []*cooldown
	u.models = slices.DeleteFunc(u.models, func(e *cooldown) bool {
		_, ok := startedOver(q, e)
		if ok = ok && active(e, now); ok {
			e.timer.Stop()
			ended = append(ended, e)
		}
		return ok
	})
	for _, e := range ended {
		w, _ := startedOver(q, e)
		p.healed(key{cred: c, model: e.model}, e, w, now, fx)
		healed = true
	}
	return healed
}

// healed tells of e, ended early because window w has room: the event's
// reason says so, and the cooldown's own reason leaves the credential.
// Requires p.mu.
func (p *Pool) healed(k key, e *cooldown, w api.QuotaWindow, now time.Time, fx *effects) {
	ev := k.ended(e, now)
	ev.Reason = fmt.Sprintf("the %s window has room again (%d%% used): it reset %s before the time it was cooling for",
		w.Name, int(math.Round(w.Used*100)), human(e.until.Sub(now)))
	fx.emit(ev)
	fx.changed, fx.wake = true, true
	p.settleReasons(k, e, now)
	if u := k.cred.usage; u.backWin == w.Name && u.back != nil {
		// "Back" is news now, not at the reset that did not wait.
		u.back.Stop()
		u.backAt, u.backWin, u.back = time.Time{}, "", nil
		delete(u.warned, w.Name)
		b := event(api.EventUsageWarning, k.cred, now)
		b.Kind, b.Window = api.UsageBack, w.Name
		b.Reason = fmt.Sprintf("%s is back — %s window has room again", k.cred.name(), w.Name)
		fx.emit(b)
	}
}
