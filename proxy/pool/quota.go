package pool

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// UsageConfig is [usage]: what the pool does with the quota windows the
// upstreams report (SetQuota).
type UsageConfig struct {
	// Reserve is the percent of every subscription's binding window kept
	// for the person's own use (claude.ai, ChatGPT): a subscription whose
	// binding window reached 100-Reserve percent takes no request until
	// that window resets. 0 is off; SetReserve overrides it per
	// credential. API keys have no reserve: nobody else draws on them.
	Reserve int
	// WarnAt is the percent of a subscription's window at which one
	// usage_warning goes out; 0 means DefaultWarnAt, over 100 never.
	WarnAt int
	// AllowExtraUsage keeps a Claude subscription in service when its
	// requests draw on paid extra usage. Off, such a subscription counts
	// as spent until its plan window resets.
	AllowExtraUsage bool
}

// DefaultWarnAt is UsageConfig.WarnAt's default.
const DefaultWarnAt = 90

// usageEvery is the least time between two usage_updated events of one
// credential, unless a threshold is crossed: every response reports
// windows, and the tray needs a meter, not a firehose.
const usageEvery = 10 * time.Second

// usage is what the pool keeps of one credential's quota windows. Guarded
// by Pool.mu.
type usage struct {
	q  api.Quota
	at time.Time // when q was reported; zero: never

	// reserve is the credential's own reserve when set is true.
	reserve int
	set     bool
	// heldUntil is the binding window's reset while the reserve holds the
	// credential back; heldWin names that window.
	heldUntil time.Time
	heldWin   string

	// models are the per-model windows reported spent: a model-scope
	// cooldown each, whose model is the window's ("sonnet"), matching
	// every request model that names it (modelMatches).
	models []*cooldown

	// warned names the windows whose warn_at crossing was announced; a
	// window drops out once it is back under it (after its reset).
	warned map[string]bool
	// announced is when the last usage_updated went out.
	announced time.Time

	// back announces, at backAt, that a subscription spent (or held by
	// its reserve) until the reset of window backWin serves again.
	backAt  time.Time
	backWin string
	back    clock.Timer
}

func (c *cred) usageLocked() *usage {
	if c.usage == nil {
		c.usage = &usage{}
	}
	return c.usage
}

// stop ends u's timers, for Remove.
func (u *usage) stop() {
	if u == nil {
		return
	}
	if u.back != nil {
		u.back.Stop()
	}
	for _, e := range u.models {
		e.timer.Stop()
	}
}

// SetUsage changes [usage]; the reserve takes effect at once.
func (p *Pool) SetUsage(cfg UsageConfig) {
	p.mu.Lock()
	p.cfg.Usage = cfg
	now := p.clk.Now()
	var fx effects
	for _, c := range p.creds {
		p.holdReserve(c, now, &fx)
	}
	p.unlock(&fx)
}

// SetReserve sets one credential's reserve in percent (0..99), which
// replaces [usage] reserve for it; a negative percent returns it to that
// default. It is kept in State. Only subscriptions (KindOAuth) are held.
func (p *Pool) SetReserve(id string, percent int) error {
	if percent > 99 {
		return fmt.Errorf("a reserve of %d%% would keep the whole subscription back; use 0 to 99, or pause it (subpool pause %s)", percent, id)
	}
	return p.update(id, func(c *cred, now time.Time, fx *effects) {
		u := c.usageLocked()
		fx.changed = true
		u.reserve, u.set = max(percent, 0), percent >= 0
		p.holdReserve(c, now, fx)
		e := event(api.EventCredentialUpdated, c, now)
		e.State = c.state(now)
		e.Reason = fmt.Sprintf("reserve %d%%", p.reserveOf(c))
		e.Until = heldUntil(u, now) // the tray shows the hold without a new snapshot
		fx.emit(e)
	})
}

// reserveOf is c's reserve in percent: its own, else [usage] reserve; 0
// for an API key. Requires p.mu.
func (p *Pool) reserveOf(c *cred) int {
	if c.Kind != api.KindOAuth {
		return 0
	}
	if c.usage != nil && c.usage.set {
		return c.usage.reserve
	}
	return min(max(p.cfg.Usage.Reserve, 0), 99)
}

// UsageAt is when credential id's windows were last reported (a response
// or a poll of its usage endpoint); zero when never.
func (p *Pool) UsageAt(id string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.byID[id]; c != nil && c.usage != nil {
		return c.usage.at
	}
	return time.Time{}
}

// SetQuota records the windows an answer (or a poll) reported for
// credential id, and acts on them:
//
//   - a shared window reported rejected (or, where the upstream gives no
//     status, at 100%) cools the credential until that window resets,
//     before any 429 says so; a per-model window cools that model only
//     (a "sonnet" window every request model naming Sonnet);
//   - a Claude subscription drawing on paid extra usage counts as spent
//     until its plan window resets (parked for payment when no reset is
//     known), unless UsageConfig.AllowExtraUsage;
//   - the reserve holds a subscription whose binding window reached
//     100-reserve percent until that window resets;
//   - usage_warning goes out once per window crossing WarnAt, and once
//     when a spent subscription comes back at its reset;
//   - usage_updated goes out at most every 10 s per credential, or at
//     once when one of the above happened;
//   - a report with windows ends the credential's learned paces
//     (pace.go): the upstream says what is left.
//
// Unknown ids are ignored.
func (p *Pool) SetQuota(id string, q api.Quota) {
	p.update(id, func(c *cred, now time.Time, fx *effects) {
		u := c.usageLocked()
		u.q, u.at = q, now
		if len(q.Windows) > 0 {
			// The windows say what is left: no pace need guess.
			p.forgetPaces(c, false)
		}
		c.util = utilization(q, now)
		news := p.heal(c, now, fx)
		news = p.coolSpent(c, now, fx) || news
		news = p.holdReserve(c, now, fx) || news
		news = p.warn(c, now, fx) || news
		if news || now.Sub(u.announced) >= usageEvery {
			u.announced = now
			e := event(api.EventUsageUpdated, c, now)
			e.Windows = slices.Clone(c.util.Windows)
			fx.emit(e)
		}
	})
}

// spent reports that w is used up: the upstream says rejected, or, where
// it gives no word (Codex), a timed window is full. API-key buckets
// (no length) are the request budget's business.
func spent(w api.QuotaWindow) bool {
	if strings.EqualFold(w.Status, "rejected") {
		return true
	}
	return w.Status == "" && w.Length > 0 && w.Used >= 1
}

// coolSpent cools c (or one model of it) for every window reported spent,
// until its reset, and treats paid extra usage as spent unless allowed.
// It reports whether anything new began. Requires p.mu.
func (p *Pool) coolSpent(c *cred, now time.Time, fx *effects) bool {
	u := c.usage
	extra := u.q.ExtraUsage != nil && u.q.ExtraUsage.InUse
	allow := p.cfg.Usage.AllowExtraUsage
	news := false
	var sharedReset time.Time
	for _, w := range u.q.Windows {
		if !spent(w) || w.ResetsAt == nil || !now.Before(*w.ResetsAt) {
			continue
		}
		until := *w.ResetsAt
		if w.Model != "" {
			if w.Model != "oi" { // Claude's included-overage pool names no model
				news = p.holdModel(c, w, until, now, fx) || news
			}
			continue
		}
		if extra && allow {
			continue // the person pays for what goes past the window
		}
		reason := fmt.Sprintf("%s window spent until it resets in %s", w.Name, human(until.Sub(now)))
		if extra {
			reason = fmt.Sprintf("%s window spent; requests would draw on paid extra usage (allow_extra_usage = false) until it resets in %s", w.Name, human(until.Sub(now)))
		}
		news = p.coolUntil(key{cred: c}, until, reason, now, fx) || news
		if active(c.cool, now) && c.cool.window == "" && c.waitsOn(c.cool.until, now) == w.Name {
			c.cool.window = w.Name // a 429 that came with this window
		}
		p.backAt(c, until, w.Name)
		if until.After(sharedReset) {
			sharedReset = until
		}
	}
	if extra && !allow && sharedReset.IsZero() {
		// No spent plan window says until when: only the person can tell
		// whether paying on is what they want.
		news = p.parkLocked(c, "", api.ParkPayment, "requests draw on paid extra usage (set allow_extra_usage = true to allow, then subpool reset "+c.ID+")", now, fx) || news
	}
	return news
}

// coolUntil installs a cooldown on k ending at until, an upstream's own
// time: no ladder step, and a cooldown already ending within a second of
// it stands. It reports whether the cooldown began or moved. Requires
// p.mu.
func (p *Pool) coolUntil(k key, until time.Time, reason string, now time.Time, fx *effects) bool {
	cur := k.get()
	if active(cur, now) && until.Sub(cur.until) < extendMin {
		return false
	}
	typ := api.EventCooldownStarted
	if active(cur, now) {
		typ = api.EventCooldownExtended
	}
	p.install(k, &cooldown{scope: k.scope(), model: k.model, until: until, reason: reason}, now)
	k.cred.probe = true
	k.cred.reason = reason
	ev := k.base(typ, now)
	ev.Until = &until
	ev.Steps = len(p.lad.steps)
	ev.Reason = reason
	fx.emit(ev)
	fx.changed = true
	return true
}

// holdModel cools the models window w counts until its reset. Requires
// p.mu.
func (p *Pool) holdModel(c *cred, w api.QuotaWindow, until, now time.Time, fx *effects) bool {
	u := c.usage
	model := strings.ToLower(w.Model)
	i := slices.IndexFunc(u.models, func(e *cooldown) bool { return e.model == model })
	if i >= 0 && active(u.models[i], now) && until.Sub(u.models[i].until) < extendMin {
		return false
	}
	reason := fmt.Sprintf("%s window spent for %s models until it resets in %s", w.Name, model, human(until.Sub(now)))
	e := &cooldown{scope: ScopeModel, model: model, until: until, reason: reason, window: w.Name}
	typ := api.EventCooldownStarted
	if i >= 0 {
		if active(u.models[i], now) {
			typ = api.EventCooldownExtended
		}
		u.models[i].timer.Stop()
		u.models[i] = e
	} else {
		u.models = append(u.models, e)
	}
	e.timer = p.clk.AfterFunc(max(until.Sub(now), 1), func() { p.endModel(c, e) })
	ev := event(typ, c, now)
	ev.Scope, ev.Model, ev.Until, ev.Reason, ev.Steps = string(ScopeModel), model, &until, reason, len(p.lad.steps)
	fx.emit(ev)
	return true
}

// endModel ends a per-model window's cooldown at its reset.
func (p *Pool) endModel(c *cred, e *cooldown) {
	p.mu.Lock()
	u := c.usage
	i := slices.Index(u.models, e)
	if i < 0 || c.removed {
		p.mu.Unlock()
		return
	}
	now := p.clk.Now()
	u.models = slices.Delete(u.models, i, i+1)
	fx := effects{wake: true}
	ev := event(api.EventCooldownEnded, c, now)
	ev.Scope, ev.Model, ev.Reason = string(ScopeModel), e.model, e.reason
	fx.emit(ev)
	p.unlock(&fx)
}

// modelHold is the per-model window cooldown that holds c for model, or
// nil. Requires p.mu.
func (c *cred) modelHold(model string, now time.Time) *cooldown {
	if c.usage == nil || model == "" {
		return nil
	}
	for _, e := range c.usage.models {
		if active(e, now) && modelMatches(model, e.model) {
			return e
		}
	}
	return nil
}

// modelMatches reports whether a request for model draws on the window
// of family: "claude-sonnet-4-5" on "sonnet", "gpt-5.3-codex-spark" on
// "gpt-5.3-codex-spark". family must be lower case and stand between
// dashes (or the ends) in model, so "opus" does not match "opusx".
func modelMatches(model, family string) bool {
	m := strings.ToLower(model)
	for i := 0; ; {
		j := strings.Index(m[i:], family)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(family)
		if (j == 0 || m[j-1] == '-') && (end == len(m) || m[end] == '-') {
			return true
		}
		i = j + 1
	}
}

// heldUntil is when u's reserve stops holding its credential back, for
// events (api.CredentialStatus.ReservedUntil); nil when it does not hold.
func heldUntil(u *usage, now time.Time) *time.Time {
	if !now.Before(u.heldUntil) {
		return nil
	}
	t := u.heldUntil
	return &t
}

// holdReserve works out whether c's reserve holds it back now and
// reports whether that began. Requires p.mu.
func (p *Pool) holdReserve(c *cred, now time.Time, fx *effects) bool {
	u := c.usage
	if u == nil {
		return false
	}
	was := now.Before(u.heldUntil)
	u.heldUntil, u.heldWin = time.Time{}, ""
	if r := p.reserveOf(c); r > 0 {
		if w, ok := planBinding(u.q); ok && w.ResetsAt != nil && now.Before(*w.ResetsAt) && w.Used*100 >= float64(100-r)-1e-9 {
			u.heldUntil, u.heldWin = *w.ResetsAt, w.Name
		}
	}
	held := now.Before(u.heldUntil)
	switch {
	case held && !was:
		p.backAt(c, u.heldUntil, u.heldWin)
		c.reason = fmt.Sprintf("held back by its reserve (%d%% of the %s window kept for your own use) until it resets", p.reserveOf(c), u.heldWin)
		e := event(api.EventCredentialUpdated, c, now)
		e.State, e.Reason = c.state(now), c.reason
		e.Until = heldUntil(u, now)
		fx.emit(e)
		return true
	case was && !held:
		fx.wake = true
	}
	return false
}

// backAt arms the one "is back" notice of c for the reset at until of
// window win, unless one later is armed already. Requires p.mu.
func (p *Pool) backAt(c *cred, until time.Time, win string) {
	u := c.usage
	if c.Kind != api.KindOAuth || !until.After(u.backAt) {
		return
	}
	if u.back != nil {
		u.back.Stop()
	}
	u.backAt, u.backWin = until, win
	u.back = p.clk.AfterFunc(max(until.Sub(p.clk.Now()), 1), func() { p.comeBack(c, until) })
}

// comeBack announces that c serves again: the window that spent it reset.
func (p *Pool) comeBack(c *cred, until time.Time) {
	p.mu.Lock()
	u := c.usage
	if c.removed || !u.backAt.Equal(until) {
		p.mu.Unlock()
		return
	}
	now := p.clk.Now()
	win := u.backWin
	u.backAt, u.backWin, u.back = time.Time{}, "", nil
	delete(u.warned, win)
	fx := effects{wake: true}
	e := event(api.EventUsageWarning, c, now)
	e.Kind, e.Window = api.UsageBack, win
	e.Reason = fmt.Sprintf("%s is back — %s window reset", c.name(), win)
	fx.emit(e)
	p.unlock(&fx)
}

// warn announces each window of a subscription that crossed WarnAt, once
// until it is back under it. It reports whether one did. Requires p.mu.
func (p *Pool) warn(c *cred, now time.Time, fx *effects) bool {
	if c.Kind != api.KindOAuth {
		return false
	}
	at := p.cfg.Usage.WarnAt
	if at <= 0 {
		at = DefaultWarnAt
	}
	u := c.usage
	news := false
	for _, w := range u.q.Windows {
		if w.Length == 0 || (w.ResetsAt != nil && !now.Before(*w.ResetsAt)) {
			continue
		}
		if w.Used*100 < float64(at)-1e-9 {
			delete(u.warned, w.Name)
			continue
		}
		if u.warned[w.Name] {
			continue
		}
		if u.warned == nil {
			u.warned = map[string]bool{}
		}
		u.warned[w.Name] = true
		news = true
		e := event(api.EventUsageWarning, c, now)
		e.Kind, e.Window, e.Used = api.UsageWarnAt, w.Name, w.Used
		e.Until = w.ResetsAt
		e.Reason = fmt.Sprintf("%s: %s window at %d%%", c.name(), w.Name, int(math.Round(w.Used*100)))
		if w.ResetsAt != nil {
			e.Reason += " · resets in " + human(w.ResetsAt.Sub(now))
		}
		fx.emit(e)
	}
	return news
}

// usageHolds reports whether c's windows hold it back for some model, or
// its reserve for all. Requires p.mu.
func (c *cred) usageHolds(now time.Time) bool {
	if c.usage == nil {
		return false
	}
	if now.Before(c.usage.heldUntil) {
		return true
	}
	for _, e := range c.usage.models {
		if active(e, now) {
			return true
		}
	}
	return false
}

// usageStatus adds to s what c's windows hold back: per-model windows'
// cooldowns (after the others) and the reserve. Requires p.mu.
func (p *Pool) usageStatus(c *cred, s *api.CredentialStatus, now time.Time) {
	s.Reserve = p.reserveOf(c)
	if c.usage == nil {
		return
	}
	for _, e := range c.usage.models {
		if active(e, now) {
			s.Cooldowns = append(s.Cooldowns, e.api(len(p.lad.steps)))
		}
	}
	if now.Before(c.usage.heldUntil) {
		t := c.usage.heldUntil
		s.ReservedUntil = &t
	}
}

// forgetModelWindows ends the per-model windows' cooldowns, for Reset;
// the next answer reports them again if they still hold. Requires p.mu.
func (p *Pool) forgetModelWindows(c *cred, now time.Time, fx *effects) bool {
	if c.usage == nil || len(c.usage.models) == 0 {
		return false
	}
	for _, e := range c.usage.models {
		e.timer.Stop()
		if active(e, now) {
			ev := event(api.EventCooldownEnded, c, now)
			ev.Scope, ev.Model, ev.Reason = string(ScopeModel), e.model, e.reason
			fx.emit(ev)
		}
	}
	c.usage.models = nil
	return true
}

// binding returns q's binding window, if any.
func binding(q api.Quota) (api.QuotaWindow, bool) {
	for _, w := range q.Windows {
		if w.Binding {
			return w, true
		}
	}
	return api.QuotaWindow{}, false
}

// utilization is q in the status's shape: every window by name, and the
// shared 5h and 7d windows in FiveHour and SevenDay.
func utilization(q api.Quota, now time.Time) *api.Utilization {
	u := &api.Utilization{Status: q.Status, UpdatedAt: now, Windows: make([]api.Window, 0, len(q.Windows))}
	for _, w := range q.Windows {
		u.Windows = append(u.Windows, w.Window)
	}
	u.FiveHour, u.SevenDay = api.SharedWindows(u.Windows)
	return u
}

// planBinding is the window that binds a subscription's plan: the binding
// one when it is a timed window, else the fullest timed window every
// model shares. Request and token buckets (no length) are an API's
// per-minute limits, which upstreams also send to subscriptions; they are
// no share of the plan to keep back.
func planBinding(q api.Quota) (api.QuotaWindow, bool) {
	if w, ok := binding(q); ok && w.Length > 0 {
		return w, true
	}
	var best api.QuotaWindow
	found := false
	for _, w := range q.Windows {
		if w.Length > 0 && w.Model == "" && (!found || w.Used > best.Used) {
			best, found = w, true
		}
	}
	return best, found
}
