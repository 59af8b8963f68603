package pool

import (
	"fmt"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// PickRequest says what a request needs.
type PickRequest struct {
	Provider string // "" picks among all providers
	// Model is the requested model; model cooldowns and parks apply only
	// to it. Empty (e.g. a model listing) skips them.
	Model string
	// Affinity is a conversation key: requests with the same key stay on
	// one credential while it is usable, so the upstream's prompt cache
	// keeps working. Empty means none.
	Affinity string
	// Exclude names credentials this request already tried.
	Exclude map[string]bool
	// Tool is the tool the request comes from (api.ToolClaudeCode…): a
	// subscription login serves only its own tool unless the person
	// opted it in for others (Credential.OtherTools). Empty serves
	// everywhere.
	Tool string
}

// Lease is one in-flight slot on a credential. Release it when the
// attempt is over, however it ended.
type Lease struct {
	Credential Credential // as it was when the lease was taken
	// OutageProbe: the credential was cooling, and this lease is its
	// provider's probe during a guessed outage (see Pick). A 429 on it
	// only says the outage goes on: the cooldowns stand, and the request
	// is no worse off than before it was sent.
	OutageProbe bool

	p        *Pool
	c        *cred
	b        *budget // the budget of the model it was taken for
	outage   bool    // a provider's probe during a guessed outage
	released bool    // guarded by p.mu
}

// Release frees the in-flight slot. It is idempotent, and harmless after
// the credential was removed.
func (l *Lease) Release() {
	if l == nil || l.p == nil {
		return
	}
	p := l.p
	p.mu.Lock()
	if !l.released {
		l.released = true
		l.c.inFlight--
		l.b.inFlight--
		l.b.unanswered = min(l.b.unanswered, l.b.inFlight)
		if l.outage {
			l.c.outageProbes--
		}
		p.wakeLocked()
	}
	p.mu.Unlock()
}

// Pick returns a lease on the best credential for req, or an
// *Unavailable when none can take it now.
//
// Usable means: not excluded, not paused, not parked (as a whole or for
// req.Model), not cooling (itself, for req.Model, or its provider; a
// spent request budget for req.Model counts as cooling for it, see
// SetBudget), not held by a learned pace (pace.go: a window spent before
// its end, a short wait after a bare 429), and under its in-flight limit
// (one while probing, or while its pace sends one at a time). Among
// those, in order:
//
//  1. the credential req.Affinity was last bound to, while it is usable;
//  2. where usage windows report their resets: among the credentials with
//     headroom and a known reset, the window that resets soonest, since
//     its unused quota is lost at the reset (resets within
//     resetTolerance count as one);
//  3. the most headroom (api.Utilization.Headroom, ignoring windows that
//     have since reset), where credentials within 5 points of the best
//     (headroomTolerance) count as equal, so usage that differs by noise
//     still shares the load;
//  4. among those, the least recently used, so equal credentials alternate;
//  5. the order added.
//
// When the affinity key's credential is not usable, the key is bound to
// the one picked instead and stays there: moving back would break the
// new credential's cache for no gain.
//
// A guessed outage is the exception to "usable": when every credential
// of req.Provider that is not paused or parked is cooling, each on ladder
// steps only (no upstream time, no spent budget), one Pick every
// outageProbeEvery (2 s) for the whole provider leases a cooling
// credential as a probe: the one whose cooldown ends soonest. A 2xx on it
// (Confirm) ends the provider's guessed cooldowns for the model; a 429
// keeps them (a hit on a cooling key does not climb). Between probes,
// Unavailable.NextReady is the time to the next one, and Changed's
// channel closes then.
func (p *Pool) Pick(req PickRequest) (*Lease, error) {
	p.mu.Lock()
	now := p.clk.Now()
	var best *cred
	var bound *affEntry
	if req.Affinity != "" {
		bound = p.aff.lookup(req.Provider, req.Affinity)
		if bound != nil && bound.usable(req.Provider, now, p.aff.idle) && bound.c.servesAt(req.Tool, now) && p.check(bound.c, req.Model, req.Exclude, now) == blockNone {
			best = bound.c
		}
	}
	if best == nil {
		list, barred := forTool(p.listLocked(req.Provider), req.Tool, now)
		// One pass to find the usable and the best headroom, one over the
		// usable to pick; the buffer keeps a pool of ordinary size off
		// the heap.
		var buf [16]candidate
		usable := buf[:0]
		for _, c := range list {
			if p.check(c, req.Model, req.Exclude, now) == blockNone {
				usable = append(usable, candidate{c, headroomAt(c.util, now), resetAt(c.util, now)})
			}
		}
		if len(usable) > 0 {
			best = choose(usable)
		} else {
			slot, probe := p.outageProbe(req, list, now)
			if probe == nil {
				if now.Before(slot) {
					p.armSlot(p.provs[req.Provider], slot, now)
				}
				u := p.unavailable(req.Provider, req.Model, list, req.Exclude, now, slot)
				if u.Paced > 0 {
					p.armPace(list, req.Model, now)
				}
				u.bar(barred, req.Tool, now)
				p.mu.Unlock()
				return nil, u
			}
			var fx effects
			l := p.leaseLocked(probe, req.Model, now, false, &fx)
			l.outage, l.OutageProbe = true, true
			probe.outageProbes++
			probe.prov.probeAt = now
			p.unlock(&fx)
			return l, nil
		}
	}
	if req.Affinity != "" {
		if bound != nil {
			bound.c, bound.last = best, now
		} else {
			p.aff.bind(req.Provider, req.Affinity, best, now)
		}
	}
	var fx effects
	l := p.leaseLocked(best, req.Model, now, true, &fx)
	p.unlock(&fx)
	return l, nil
}

// Acquire takes a slot on one credential again, e.g. after a capacity wait
// released it or for an in-place retry. It returns ErrUnknown, or an
// *Unavailable describing that one credential when it is not usable for
// model now. The affinity map is left alone.
func (p *Pool) Acquire(id, model string) (*Lease, error) {
	p.mu.Lock()
	c := p.byID[id]
	if c == nil {
		p.mu.Unlock()
		return nil, ErrUnknown
	}
	now := p.clk.Now()
	if p.check(c, model, nil, now) != blockNone {
		u := p.unavailable(c.Provider, model, []*cred{c}, nil, now, time.Time{})
		p.mu.Unlock()
		return nil, u
	}
	var fx effects
	l := p.leaseLocked(c, model, now, true, &fx)
	p.unlock(&fx)
	return l, nil
}

type candidate struct {
	c     *cred
	h     float64   // headroom
	reset time.Time // the soonest reset of a window in force; zero when none is known
}

// resetTolerance is how close two windows' resets must be to count as one.
// Quota left in windows that reset minutes apart is lost at about the same
// time; ranking them by the minute would pin all traffic on one while
// headroom and alternation could share it.
const resetTolerance = 5 * time.Minute

// choose is Pick's ranking (steps 2 to 4) over usable, which must not be
// empty; it reorders usable.
func choose(usable []candidate) *cred {
	var soonest time.Time
	for _, x := range usable {
		if x.h > 0 && !x.reset.IsZero() && (soonest.IsZero() || x.reset.Before(soonest)) {
			soonest = x.reset
		}
	}
	if !soonest.IsZero() {
		n := 0
		for _, x := range usable {
			// A credential never heard from stays in: it may have the
			// most headroom, and only a request finds out. An API key
			// (request and token buckets, no plan window) waits while a
			// subscription has headroom: its tokens cost money, the
			// subscription's are lost at their reset.
			if x.c.util == nil || (x.h > 0 && !x.reset.IsZero() && x.reset.Sub(soonest) <= resetTolerance) {
				usable[n] = x
				n++
			}
		}
		usable = usable[:n]
	}
	top := 0.0
	for _, x := range usable {
		top = max(top, x.h)
	}
	var best *cred
	for _, x := range usable {
		if x.h >= top-headroomTolerance && (best == nil || x.c.seq < best.seq) {
			best = x.c
		}
	}
	return best
}

// leaseLocked takes a slot on c for model; with spend, it counts against
// model's budget, and the lease that spends it starts its cooldown. A
// guessed outage's probe does not spend: it is refused far more often than
// served, a refusal costs the upstream's budget nothing, and counting each
// one ran a key's budget out on refusals alone in the bench, turning the
// guessed outage into a wait for that budget's reset. Requires p.mu.
func (p *Pool) leaseLocked(c *cred, model string, now time.Time, spend bool, fx *effects) *Lease {
	p.seq++
	c.seq = p.seq
	c.lastUsed = now
	c.inFlight++
	b := p.budgetFor(c, model, now)
	p.countLease(c, b, now, spend, fx)
	if spend {
		p.paceLease(c, model, now)
		p.paceNews(c, now, fx)
	}
	return &Lease{Credential: c.Credential, p: p, c: c, b: b}
}

// block is why a credential cannot take a request, in the order checked.
type block uint8

const (
	blockNone block = iota
	blockPaused
	blockParked
	blockCooling
	blockReserved // the reserve keeps the rest of the window for the person
	blockPaced    // a learned pace holds it until its next slot (pace.go)
	blockBusy
	blockExcluded
)

// check says whether c can take a request for model now. The order puts
// what only a person can fix first, then what time fixes, then what other
// requests finishing fix. Requires p.mu.
func (p *Pool) check(c *cred, model string, exclude map[string]bool, now time.Time) block {
	switch {
	case c.paused:
		return blockPaused
	case len(c.parks) > 0 && c.parkFor(model) != nil:
		return blockParked
	case active(c.prov.cool, now) || active(c.cool, now):
		return blockCooling
	case model != "" && len(c.models) > 0 && active(c.models[model], now):
		return blockCooling
	case active(c.spentFor(model), now):
		return blockCooling
	case c.usage != nil && c.modelHold(model, now) != nil:
		return blockCooling
	case c.usage != nil && now.Before(c.usage.heldUntil):
		return blockReserved
	case (c.prov.pace != nil || len(c.paces) > 0) && p.paced(c, model, now):
		return blockPaced
	case p.full(c, model, now):
		return blockBusy
	case exclude[c.ID]:
		return blockExcluded
	}
	return blockNone
}

func (p *Pool) full(c *cred, model string, now time.Time) bool {
	if p.probing(c, model, now) {
		return true
	}
	n := p.limit(c)
	return n > 0 && c.inFlight >= n
}

// probing reports that c's one request after a cooldown, or after the
// reset of model's spent budget, is out. The budget's probe is per model
// and waits for an answer, not for the slot: a stream still running from
// before the reset says nothing about the new window, and holding the
// probe behind it would only delay it.
func (p *Pool) probing(c *cred, model string, now time.Time) bool {
	if c.probe && c.inFlight > 0 {
		return true
	}
	if c.inFlight > 0 && p.paceAlone(c, model, now) {
		return true
	}
	if c.exhausted == 0 {
		return false
	}
	b := c.buds[model]
	return b != nil && b.unanswered > 0 && b.refilling(now)
}

func (p *Pool) limit(c *cred) int {
	if c.MaxInFlight > 0 {
		return c.MaxInFlight
	}
	return p.cfg.MaxInFlight
}

// longest returns the cooldown that keeps c out for model the longest, or
// nil when none holds. Requires p.mu.
func longest(c *cred, model string, now time.Time) *cooldown {
	var w *cooldown
	for _, e := range [...]*cooldown{c.prov.cool, c.cool, c.models[model], c.spentFor(model), c.modelHold(model, now)} {
		if active(e, now) && (w == nil || e.until.After(w.until)) {
			w = e
		}
	}
	return w
}

// headroomTolerance is how close to the best headroom counts as equal.
// Compared exactly, a credential at 41% used would take every request from
// one at 42% until its next response reported back, and concurrent
// requests would pile onto it.
const headroomTolerance = 0.05

// headroomAt is api.Utilization.Headroom, except that a window whose reset
// time has passed counts as empty: its usage was reported before the reset,
// and a credential that is never picked would never report anew.
func headroomAt(u *api.Utilization, now time.Time) float64 {
	if u == nil {
		return 1
	}
	return 1 - min(usedAt(u, now), 1)
}

// resetAt is the soonest reset of u's windows still in force, zero when
// none names one.
func resetAt(u *api.Utilization, now time.Time) time.Time {
	var r time.Time
	if u == nil {
		return r
	}
	for _, w := range [...]*api.Window{u.FiveHour, u.SevenDay} {
		if w != nil && w.ResetsAt != nil && now.Before(*w.ResetsAt) && (r.IsZero() || w.ResetsAt.Before(r)) {
			r = *w.ResetsAt
		}
	}
	return r
}

func usedAt(u *api.Utilization, now time.Time) float64 {
	used := 0.0
	for _, w := range [...]*api.Window{u.FiveHour, u.SevenDay} {
		if w == nil || (w.ResetsAt != nil && !now.Before(*w.ResetsAt)) {
			continue
		}
		used = max(used, w.Used)
	}
	return used
}

// Unavailable is Pick's error when no credential can take the request now.
// Each credential of the provider is counted once, under the first that
// applies of Paused, Parked, Cooling, Reserved, Paced, Busy, Excluded.
type Unavailable struct {
	Provider string
	Model    string
	Total    int // credentials of the provider (1 for Acquire)

	Paused, Parked, Cooling, Busy int
	// Reserved counts subscriptions held back by their reserve until
	// their binding window resets; those resets count for NextReady.
	Reserved int
	// Paced counts credentials held to a learned pace (after 429s that
	// named no reset time) until their next slot, which counts for
	// NextReady.
	Paced int
	// Excluded counts credentials usable but already tried by this request.
	Excluded int
	// Barred counts subscription logins kept for their own tool
	// (PickRequest.Tool); they count in Total.
	Barred int
	// Region counts the parked credentials whose egress's location the
	// provider refuses (api.ParkRegion); regionWhy is the last refusal.
	Region    int
	regionWhy string
	// NextReady is the shortest wait until a cooling or paced credential
	// is usable again, or until the provider's next probe during a guessed
	// outage (see Pick), HasNext whether there is one; Changed's channel
	// closes then. Paused, parked and busy
	// ones do not count: the first two wait on a person, the last on
	// other requests, neither on the clock.
	NextReady time.Duration
	HasNext   bool
	// Probe says NextReady is the provider's next probe in a guessed
	// outage, not the end of a cooldown.
	Probe bool
	// Reasons has one line per credential that is not usable, in plain
	// words: "key-a: cooling 4m10s (429 rate_limit_error)".
	Reasons []string
}

// forTool splits list into the credentials that serve tool now and those
// kept from it: logins kept for their own tool, and credentials that
// refused it lately. It copies only when one is kept out, so a pool with
// no such rule allocates nothing. Requires p.mu.
func forTool(list []*cred, tool string, now time.Time) (serve, barred []*cred) {
	for i, c := range list {
		if c.servesAt(tool, now) {
			continue
		}
		serve = append(serve, list[:i]...)
		for _, c := range list[i:] {
			if c.servesAt(tool, now) {
				serve = append(serve, c)
			} else {
				barred = append(barred, c)
			}
		}
		return serve, barred
	}
	return list, nil
}

// bar counts the credentials kept from tool into u, each with the words
// that say why and how to change it. Requires p.mu.
func (u *Unavailable) bar(barred []*cred, tool string, now time.Time) {
	for _, c := range barred {
		u.Total++
		u.Barred++
		if !c.serves(tool) {
			own := api.SubscriptionTool(c.Provider, c.Kind)
			u.Reasons = append(u.Reasons, fmt.Sprintf("%s: serves %s only, not %s (to let other tools use it: subpool tools %s all%s)",
				c.name(), api.ToolTitle(own), api.ToolTitle(tool), c.ID, billingNote(c.Provider)))
			continue
		}
		b := c.toolBars[tool]
		u.Reasons = append(u.Reasons, fmt.Sprintf("%s: refused %s's last request (%s); not asked for %s again for %s",
			c.name(), api.ToolTitle(tool), b.reason, api.ToolTitle(tool), human(b.until.Sub(now))))
	}
}

// billingNote says what opening a login to other tools costs, where the
// provider says it costs something.
func billingNote(provider string) string {
	if provider == "anthropic" {
		return "; Anthropic bills other tools' use of a subscription as extra usage"
	}
	return ""
}

// Error is one line a person can act on.
func (u *Unavailable) Error() string {
	forModel := ""
	if u.Model != "" {
		forModel = " for " + u.Model
	}
	switch {
	case u.Total == 0:
		return fmt.Sprintf("no %s credentials; add one with `subpool add-key %s`", u.Provider, u.Provider)
	case u.Region == u.Total:
		// Every credential leaves from the one refused egress: one line
		// for all of them, since one setting cures them all.
		return fmt.Sprintf("%s refuses the location subpool's requests leave from (%s): set [network] proxy in config.toml to an http:// or socks5:// proxy elsewhere, or give a credential its own with --proxy URL", u.Provider, u.regionWhy)
	case u.Cooling == u.Total && u.Probe:
		return fmt.Sprintf("every %s credential is cooling down%s on a guessed time; the next probe of the limit goes in %s", u.Provider, forModel, human(u.NextReady))
	case u.Cooling == u.Total && u.HasNext && u.Total == 1:
		return fmt.Sprintf("the only %s credential is cooling down%s; ready in %s", u.Provider, forModel, human(u.NextReady))
	case u.Cooling == u.Total && u.HasNext:
		return fmt.Sprintf("all %d %s credentials are cooling down%s; next ready in %s", u.Total, u.Provider, forModel, human(u.NextReady))
	case u.Reserved == u.Total && u.HasNext:
		return fmt.Sprintf("every %s subscription is held back by its usage reserve, kept for your own use: %s; the first frees in %s (change it with subpool reserve ID PERCENT)",
			u.Provider, strings.Join(u.Reasons, "; "), human(u.NextReady))
	case u.Paced > 0 && u.Paced+u.Cooling == u.Total && u.HasNext:
		what := "paced to the limit its bare 429s showed"
		if u.Cooling > 0 {
			what = "paced to the limit its bare 429s showed, or cooling down"
		}
		return fmt.Sprintf("every %s credential is %s%s; the next goes in %s", u.Provider, what, forModel, human(u.NextReady))
	case u.Reserved > 0 && u.Reserved+u.Cooling == u.Total && u.HasNext:
		return fmt.Sprintf("every %s credential is cooling down or held back by its usage reserve: %s; the first frees in %s",
			u.Provider, strings.Join(u.Reasons, "; "), human(u.NextReady))
	}
	s := fmt.Sprintf("no %s credential can take a request%s now: %s", u.Provider, forModel, strings.Join(u.Reasons, "; "))
	if u.HasNext {
		s += "; next ready in " + human(u.NextReady)
	}
	return s
}

// unavailable explains why none of list can take a request; slot, when
// after now, is the provider's next outage probe. Requires p.mu.
func (p *Pool) unavailable(provider, model string, list []*cred, exclude map[string]bool, now, slot time.Time) *Unavailable {
	u := &Unavailable{Provider: provider, Model: model, Total: len(list)}
	if now.Before(slot) {
		u.NextReady, u.HasNext, u.Probe = slot.Sub(now), true, true
		u.Reasons = append(u.Reasons, outageNote(provider, u.NextReady))
	}
	for _, c := range list {
		var why string
		switch p.check(c, model, exclude, now) {
		case blockPaused:
			u.Paused++
			why = "paused (subpool resume " + c.ID + ")"
		case blockParked:
			u.Parked++
			pk := c.parkFor(model)
			if pk.Kind == api.ParkRegion && c.Egress == "" {
				u.Region++
				u.regionWhy = pk.Reason
			}
			why = parkWords(pk, c)
		case blockCooling:
			u.Cooling++
			e := longest(c, model, now)
			d := e.until.Sub(now)
			if !u.HasNext || d < u.NextReady {
				u.NextReady, u.HasNext, u.Probe = d, true, false
			}
			why = "cooling " + human(d)
			switch e.scope {
			case ScopeModel:
				if e.model != "" {
					why += " for " + e.model
				}
			case ScopeProvider:
				why += ", " + c.Provider + "-wide"
			}
			if e.reason != "" {
				why += " (" + e.reason + ")"
			}
		case blockReserved:
			u.Reserved++
			d := c.usage.heldUntil.Sub(now)
			if !u.HasNext || d < u.NextReady {
				u.NextReady, u.HasNext, u.Probe = d, true, false
			}
			why = fmt.Sprintf("held back by its reserve (%d%% of the %s window kept for your own use) until it resets in %s", p.reserveOf(c), c.usage.heldWin, human(d))
		case blockPaced:
			u.Paced++
			at, pc := p.pacedUntil(c, model, now)
			d := at.Sub(now)
			if !u.HasNext || d < u.NextReady {
				u.NextReady, u.HasNext, u.Probe = d, true, false
			}
			why = paceWords(pc, d)
		case blockBusy:
			u.Busy++
			if p.probing(c, model, now) {
				why = "busy (one probe in flight to see whether its limit lifted)"
			} else {
				why = fmt.Sprintf("busy (%d in flight, limit %d)", c.inFlight, p.limit(c))
			}
		case blockExcluded:
			u.Excluded++
			why = "already tried by this request"
		default:
			continue
		}
		u.Reasons = append(u.Reasons, c.name()+": "+why)
	}
	return u
}

func parkWords(pk *api.Park, c *cred) string {
	var s string
	switch {
	case pk.Kind == api.ParkRelogin && c.Kind == api.KindAPIKey:
		// A refused key is not fixed by logging in: it needs replacing.
		s = "the key was refused: add a new one (subpool add-key " + c.Provider + " --label NAME) and remove this one (subpool remove " + c.ID + ")"
	case pk.Kind == api.ParkRelogin && c.Source != "":
		s = "log in again in " + c.Source + ", then subpool import " + c.Source
	case pk.Kind == api.ParkRelogin:
		s = "log in again (subpool login " + c.Provider + ")"
	case pk.Kind == api.ParkRegion:
		s = regionAdvice(c)
	case pk.Model != "":
		s = "plan or billing does not cover " + pk.Model
	default:
		s = "billing needs attention"
	}
	if pk.Reason != "" {
		s += " (" + pk.Reason + ")"
	}
	return s
}

// human formats a wait for people: whole seconds rounded up, no zero
// units ("5m", "4m10s", "1h2m"); "0s" never shows for a wait still running.
func human(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s <= 0 {
		return "0s"
	}
	h, m, sec := s/3600, s/60%60, s%60
	var b strings.Builder
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if sec > 0 && h == 0 {
		fmt.Fprintf(&b, "%ds", sec)
	}
	return b.String()
}
