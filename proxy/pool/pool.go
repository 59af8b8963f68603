// Package pool keeps the credentials of every provider and decides which one
// serves the next request. It is pure: no HTTP, no keychain, no goroutines of
// its own; time comes from an injected clock.Clock, so a test can walk a
// cooldown ladder in microseconds on a clock.Fake.
//
// A credential is ready, cooling, parked or paused; a ready one may be
// held to a pace learned from 429s that named no reset (pace.go).
// Cooldowns are keyed by scope: the credential, one (credential, model)
// pair, or the whole provider (one egress IP shared by every credential).
// Each key climbs its own ladder. Pick chooses among the credentials that
// are usable for a model; State and Restore carry the parts worth keeping
// across a restart. docs/pool.md tells the rules in prose.
//
// # Lock rules
//
// One mutex guards everything, and no method holds it while calling out:
// events go to the Emitter and the OnChange hook runs only after the mutex
// is released, so either may call straight back into the Pool (the hub
// answering a snapshot with Status, the owner writing State to disk).
// Events from concurrent calls may reach the Emitter in a different order
// than the changes were made; each event carries its own Time.
//
// The zero Pool is not usable; call New.
package pool

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// Scope is where a cooldown applies. The strings are those of
// classify.Scope, so a verdict's scope converts directly; pool keeps its
// own type because it does not import classify.
type Scope string

const (
	ScopeCredential Scope = "credential"
	ScopeModel      Scope = "model"
	ScopeProvider   Scope = "provider"
)

// Limit scopes a provider declares with SetProvider (config limit_scope).
const (
	LimitCredential = "credential"
	// LimitEgress: the upstream counts requests per source IP, so a 429 on
	// any credential is a 429 for all of them.
	LimitEgress = "egress"
)

// ErrUnknown is returned for an id the pool does not hold.
var ErrUnknown = errors.New("unknown credential")

// Config tunes the pool. The zero value gives the defaults below.
type Config struct {
	// Ladder is the cooldown after the 1st, 2nd, … rate-limit hit on one
	// key when the upstream names no time of its own; the last step
	// repeats. Default {30s, 60s, 5m}. Steps ≤ 0 are dropped.
	Ladder []time.Duration
	// ResetAfter is how long a key must go without a hit before its ladder
	// starts over at step 1, counted from the last hit. Keep it longer than
	// the longest step, or the hit after that step always starts over.
	// Default 10m.
	ResetAfter time.Duration
	// MaxInFlight is the per-credential limit on concurrent requests for
	// credentials that set none. 0 means unlimited.
	MaxInFlight int
	// AffinityMax bounds how many affinity keys are remembered. Default 4096.
	AffinityMax int
	// AffinityIdle forgets an affinity key unused for this long. Default 1h.
	AffinityIdle time.Duration
	// Usage is [usage]: reserve, warnings, extra usage (quota.go).
	Usage UsageConfig
}

// Defaults for Config's zero fields.
var (
	DefaultLadder = []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute}
)

const (
	DefaultResetAfter   = 10 * time.Minute
	DefaultAffinityMax  = 4096
	DefaultAffinityIdle = time.Hour
)

// Credential is what the pool knows of one credential: never its secret.
type Credential struct {
	ID, Provider, Label, Kind string // Kind api.KindAPIKey | api.KindOAuth
	Source                    string // "claude-code" | "codex" | ""
	MaxInFlight               int    // 0 → Config.MaxInFlight
	// OtherTools opens a subscription login to tools other than its own
	// (api.SubscriptionTool): the person's choice, never the default.
	OtherTools bool
	// Egress names the credential's own egress proxy, shown without any
	// user:password (scheme://host:port); "" is the egress every other
	// credential without one shares ([network] proxy or the
	// environment's). A region refusal parks every credential of the
	// provider with the same Egress (region.go).
	Egress string
}

// serves reports whether c takes requests from tool. An empty tool is a
// request of subpool's own (a model listing, a probe), which any
// credential serves.
func (c Credential) serves(tool string) bool {
	own := api.SubscriptionTool(c.Provider, c.Kind)
	return own == "" || tool == "" || tool == own || c.OtherTools
}

// toolBarFor is how long a tool the credential refused is kept off it.
// The refusal (no extra usage left for third-party apps, an identity the
// upstream will not serve) lasts until the person changes something, so
// asking again soon only spends a refused call per request.
const toolBarFor = 30 * time.Minute

// toolBar is a tool kept off a credential after it refused that tool.
type toolBar struct {
	until  time.Time
	reason string
}

// servesAt is serves, less the tools the credential refused lately.
// Requires p.mu.
func (c *cred) servesAt(tool string, now time.Time) bool {
	if !c.serves(tool) {
		return false
	}
	b, ok := c.toolBars[tool]
	return !ok || !now.Before(b.until)
}

// BarTool keeps tool off the credential id for a while (toolBarFor): the
// credential refused a request because of the tool that sent it, and goes
// on serving every other tool. Nothing cools, parks or changes state; a
// person's opt-in (OtherTools) does not lift it, a restart does.
func (p *Pool) BarTool(id, tool, reason string) {
	if tool == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.byID[id]
	if c == nil {
		return
	}
	if c.toolBars == nil {
		c.toolBars = map[string]toolBar{}
	}
	c.toolBars[tool] = toolBar{until: p.clk.Now().Add(toolBarFor), reason: reason}
}

// name is how a person knows the credential: its label, else its id.
func (c Credential) name() string {
	if c.Label != "" {
		return c.Label
	}
	return c.ID
}

// Pool holds the credentials of all providers. Its methods are safe for
// concurrent use.
type Pool struct {
	clk clock.Clock
	em  api.Emitter
	lad ladder
	cfg Config

	mu       sync.Mutex
	creds    []*cred // in the order added
	byID     map[string]*cred
	provs    map[string]*provider
	aff      affinity
	seq      uint64 // counts leases; orders credentials by last use
	onChange func()
	ready    chan struct{} // handed out by Changed, closed by wakeLocked
	// paceWake wakes waiters at the earliest slot of a paced credential
	// a refused Pick met (pace.go).
	paceWake wakeAt
	// paceQuiet tells paces forgotten after a quiet spell (pace_event.go).
	paceQuiet paceQuiet
}

// cred is one credential and everything the pool tracks about it. Guarded
// by Pool.mu.
type cred struct {
	Credential
	prov    *provider
	removed bool // set by Remove, so leases and affinity entries still holding it see it is gone

	paused   bool
	toolBars map[string]toolBar   // tools it refused lately (BarTool)
	cool     *cooldown            // credential-wide
	models   map[string]*cooldown // per model
	// ladders remembers hits per key: "" is the credential key, anything
	// else a model. It outlives the cooldowns, which is what makes a
	// second hit within ResetAfter climb.
	ladders map[string]ladderMem
	parks   []api.Park

	reason   string
	util     *api.Utilization
	expiry   time.Time
	counters api.Counters
	inFlight int
	lastUsed time.Time
	// probe is set by a cooldown and cleared by the next success: until
	// then the credential takes one request at a time.
	probe bool
	// outageProbes counts the leases out on it as a provider's probe
	// during a guessed outage (outage.go): a 2xx on one ends the outage.
	outageProbes int
	// seq is the Pool.seq of the last lease. Least-recently-used is judged
	// on it rather than lastUsed because clocks tie: a fake clock that does
	// not move, or a coarse real one under load.
	seq uint64

	// buds are the request budgets by model ("" for requests that name
	// none), with the leases each counts; see budget.go. exhausted counts
	// those spent (before their reset or after it, awaiting a probe's
	// answer), so that selection looks a model up only when one is.
	buds      map[string]*budget
	exhausted int

	// usage is the quota windows last reported and what they hold back
	// (quota.go); nil until the first report or reserve.
	usage *usage

	// paces are the learned paces by model ("" for the credential's own;
	// pace.go), met the successes a new one starts from.
	paces map[string]*pacer
	met   meter
	// pacesShown is what the last pace_changed said of them
	// (pace_event.go).
	pacesShown []api.Pace
}

// provider is one upstream and the state all its credentials share.
type provider struct {
	name   string
	egress bool
	creds  []*cred
	cool   *cooldown // provider-wide: one entry, however many credentials it blocks
	ladder ladderMem
	// probeAt is when the last probe of a guessed outage went (outage.go);
	// slotWake wakes waiters at the next one's time.
	probeAt  time.Time
	slotWake wakeAt
	// pace is the provider-wide learned pace of an egress provider
	// (pace.go), met the successes it starts from.
	pace *pacer
	met  meter
	// paceShown: a pace_changed went out while pace was set.
	paceShown bool
}

// New returns an empty pool. em nil means api.Discard.
func New(clk clock.Clock, cfg Config, em api.Emitter) *Pool {
	if em == nil {
		em = api.Discard
	}
	var steps []time.Duration
	for _, d := range cfg.Ladder {
		if d > 0 {
			steps = append(steps, d)
		}
	}
	if len(steps) == 0 {
		steps = slices.Clone(DefaultLadder)
	}
	cfg.Ladder = steps
	if cfg.ResetAfter <= 0 {
		cfg.ResetAfter = DefaultResetAfter
	}
	if cfg.MaxInFlight < 0 {
		cfg.MaxInFlight = 0
	}
	if cfg.AffinityMax <= 0 {
		cfg.AffinityMax = DefaultAffinityMax
	}
	if cfg.AffinityIdle <= 0 {
		cfg.AffinityIdle = DefaultAffinityIdle
	}
	return &Pool{
		clk:   clk,
		em:    em,
		lad:   ladder{steps: steps, resetAfter: cfg.ResetAfter},
		cfg:   cfg,
		byID:  map[string]*cred{},
		provs: map[string]*provider{},
		aff:   newAffinity(cfg.AffinityMax, cfg.AffinityIdle),
	}
}

// OnChange sets f to be called after every change that State would
// reflect (cooldowns, ladders, parks, pauses, removals), so the owner knows
// to write the state file. f runs outside the pool's lock, on the goroutine
// that made the change (a clock timer's, for a cooldown that ends), and may
// call State. It should be quick: coalesce writes on your side. Setting
// nil removes the hook.
func (p *Pool) OnChange(f func()) {
	p.mu.Lock()
	p.onChange = f
	p.mu.Unlock()
}

// effects gathers what a change must tell the outside world while the lock
// is held; unlock delivers it after releasing the lock.
type effects struct {
	events  []api.Event
	changed bool
	wake    bool // something may have become usable: close Changed's channel
}

func (fx *effects) emit(e api.Event) { fx.events = append(fx.events, e) }

// unlock releases p.mu, then emits the gathered events and runs the
// OnChange hook. Requires that p.mu is held.
func (p *Pool) unlock(fx *effects) {
	if fx.wake {
		p.wakeLocked()
	}
	em, hook := p.em, p.onChange
	p.mu.Unlock()
	for _, e := range fx.events {
		em.Emit(e)
	}
	if fx.changed && hook != nil {
		hook()
	}
}

// update runs f on the credential id names while holding p.mu, then
// unlocks with the effects f gathered, so events go out and waiters wake
// only after the lock is released. For an id the pool does not hold it
// runs nothing and returns ErrUnknown.
func (p *Pool) update(id string, f func(c *cred, now time.Time, fx *effects)) error {
	p.mu.Lock()
	c := p.byID[id]
	if c == nil {
		p.mu.Unlock()
		return ErrUnknown
	}
	var fx effects
	now := p.clk.Now()
	f(c, now, &fx)
	p.paceNews(c, now, &fx)
	p.unlock(&fx)
	return nil
}

// event starts an event about c. The hub assigns IDs and may overwrite Time.
func event(t api.EventType, c *cred, now time.Time) api.Event {
	return api.Event{Type: t, Time: now, Provider: c.Provider, CredentialID: c.ID, Label: c.Label}
}

// providerLocked returns the named provider, creating it. Requires p.mu.
func (p *Pool) providerLocked(name string) *provider {
	pr := p.provs[name]
	if pr == nil {
		pr = &provider{name: name}
		p.provs[name] = pr
	}
	return pr
}

// SetProvider declares how an upstream counts its limits. With limitScope
// LimitEgress, a credential-scoped rate limit on any of its credentials
// cools the whole provider. Any other value, and any provider never
// declared, means LimitCredential.
func (p *Pool) SetProvider(name, limitScope string) {
	p.mu.Lock()
	p.providerLocked(name).egress = limitScope == LimitEgress
	p.mu.Unlock()
}

// Add adds a credential, or updates the metadata of one already held (by
// ID) while keeping its state: cooldowns, parks, counters. An empty ID is
// ignored.
func (p *Pool) Add(c Credential) {
	if c.ID == "" {
		return
	}
	p.mu.Lock()
	now := p.clk.Now()
	var fx effects
	pr := p.providerLocked(c.Provider)
	if old := p.byID[c.ID]; old != nil {
		if old.Credential == c {
			p.mu.Unlock()
			return
		}
		if old.prov != pr {
			// The provider-wide cooldown stays with the provider it was
			// earned on; the credential's own state moves with it.
			old.prov.creds = slices.DeleteFunc(old.prov.creds, func(x *cred) bool { return x == old })
			pr.creds = append(pr.creds, old)
			old.prov = pr
		}
		opened := c.OtherTools != old.OtherTools
		if c.Egress != old.Egress {
			// Another egress is another location: the region refusal
			// belonged to the old one.
			dropRegionParks(old, now, &fx)
		}
		old.Credential = c
		fx.wake = true // a new provider, or a higher in-flight limit
		e := event(api.EventCredentialUpdated, old, now)
		e.State = old.state(now)
		if opened {
			// The tray reads what changed from the reason.
			e.Reason = api.ReasonOtherToolsOff
			if c.OtherTools {
				e.Reason = api.ReasonOtherToolsOn
			}
		}
		fx.emit(e)
	} else {
		nc := &cred{Credential: c, prov: pr}
		p.creds = append(p.creds, nc)
		pr.creds = append(pr.creds, nc)
		p.byID[c.ID] = nc
		fx.wake = true
		e := event(api.EventCredentialAdded, nc, now)
		e.State = api.StateReady
		fx.emit(e)
	}
	p.unlock(&fx)
}

// Remove drops a credential and its state. Leases on it stay valid and
// their Release is harmless.
func (p *Pool) Remove(id string) error {
	return p.update(id, func(c *cred, now time.Time, fx *effects) {
		if c.cool != nil {
			c.cool.timer.Stop()
			c.cool = nil
		}
		for _, e := range c.models {
			e.timer.Stop()
		}
		c.models = nil
		for _, b := range c.buds {
			if b.spent != nil {
				b.spent.timer.Stop()
				b.spent = nil
			}
		}
		c.usage.stop()
		c.removed = true
		delete(p.byID, id)
		p.creds = slices.DeleteFunc(p.creds, func(x *cred) bool { return x == c })
		c.prov.creds = slices.DeleteFunc(c.prov.creds, func(x *cred) bool { return x == c })
		fx.changed = true
		fx.emit(event(api.EventCredentialRemoved, c, now))
	})
}

// Pause takes a credential out of selection until Resume. Pausing a
// paused credential does nothing.
func (p *Pool) Pause(id string) error { return p.setPaused(id, true) }

// Resume undoes Pause.
func (p *Pool) Resume(id string) error { return p.setPaused(id, false) }

func (p *Pool) setPaused(id string, paused bool) error {
	return p.update(id, func(c *cred, now time.Time, fx *effects) {
		if c.paused != paused {
			c.paused = paused
			fx.wake = !paused
			e := event(api.EventCredentialUpdated, c, now)
			e.State = c.state(now)
			fx.emit(e)
			fx.changed = true
		}
	})
}

// Credential returns the metadata of one credential.
func (p *Pool) Credential(id string) (Credential, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.byID[id]; c != nil {
		return c.Credential, true
	}
	return Credential{}, false
}

// Credentials lists the credentials of a provider ("" for all) in the
// order they were added.
func (p *Pool) Credentials(provider string) []Credential {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.listLocked(provider)
	out := make([]Credential, len(list))
	for i, c := range list {
		out[i] = c.Credential
	}
	return out
}

// listLocked is the credentials of a provider, "" for all. The slice is
// the pool's own: do not keep or modify it. Requires p.mu.
func (p *Pool) listLocked(provider string) []*cred {
	if provider == "" {
		return p.creds
	}
	if pr := p.provs[provider]; pr != nil {
		return pr.creds
	}
	return nil
}

// Record counts one finished attempt on a credential. A success also
// clears the last reason, but only when nothing is holding the credential
// back any more (no cooldown or park at any scope): an old "429" next to a
// healthy credential misleads, while the reason of a model that is still
// cooling is still news. Unknown ids are ignored.
func (p *Pool) Record(id string, success bool, rateLimited bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.byID[id]
	if c == nil {
		return
	}
	c.counters.Requests++
	if !success {
		c.counters.Errors++
	}
	if rateLimited {
		c.counters.RateLimits++
	}
	if success {
		c.probe = false
		if c.clearLocked(p.clk.Now()) {
			c.reason = ""
		}
		p.wakeLocked()
	}
}

// Confirm says an upstream accepted a request for model on id (its
// answer's headers said 2xx): a credential probing after a cooldown is
// open again at once, not only when a long stream ends. Counters wait for
// Record.
//
// It also ends the probe after the reset of model's spent budget when
// that answer reported no budget (SetBudget comes first when it did): an
// upstream that stopped reporting must not leave the model one request at
// a time. Other models' probes are theirs to end. Record does not,
// because a stream begun before the reset may end after it and say
// nothing about the new window.
//
// On a credential leased as a provider's probe during a guessed outage
// (see Pick), it ends that credential's guessed cooldowns for model and
// the provider's own: a probe confirms only the credential it went to. And
// as a success, it clears the credential's reason when nothing holds it
// back any more, as Record does, and counts for the learned paces on id
// and model (pace.go): the first after a run of bare 429s starts the
// key's next window.
func (p *Pool) Confirm(id, model string) {
	p.update(id, func(c *cred, now time.Time, fx *effects) {
		fx.wake = true
		if c.outageProbes > 0 {
			p.endGuessed(c, model, now, fx)
		}
		c.probe = false
		p.paceOK(c, model, now)
		if b := c.buds[model]; b != nil && b.refilling(now) {
			c.setBudget(b, 0, time.Time{})
		}
		if c.clearLocked(now) {
			c.reason = ""
		}
	})
}

// clearLocked reports whether nothing holds c back at any scope.
func (c *cred) clearLocked(now time.Time) bool {
	if c.paused || len(c.parks) > 0 || active(c.cool, now) || active(c.prov.cool, now) || c.usageHolds(now) {
		return false
	}
	for _, e := range c.models {
		if active(e, now) {
			return false
		}
	}
	if c.exhausted > 0 {
		for _, b := range c.buds {
			if active(b.spent, now) {
				return false
			}
		}
	}
	return true
}

// SetReason records the last thing that went wrong with a credential, in
// plain words, for status. Unknown ids are ignored.
func (p *Pool) SetReason(id, reason string) {
	p.mu.Lock()
	if c := p.byID[id]; c != nil {
		c.reason = reason
	}
	p.mu.Unlock()
}

// SetExpiry records when an OAuth access token expires, for status only:
// refreshing is the proxy's business.
func (p *Pool) SetExpiry(id string, t time.Time) {
	p.mu.Lock()
	if c := p.byID[id]; c != nil {
		c.expiry = t
	}
	p.mu.Unlock()
}

// Reset clears a credential's cooldowns at every scope (its own, its
// models', and its provider's shared one, since a provider-wide cooldown
// is the one keeping it out), the ladders behind them, its request
// budgets (every model's), its learned paces (and its provider's) and its
// payment parks, all at once. A re-login park stays: only a new login
// clears it (Unpark). Pause stays too: that is the user's own choice.
func (p *Pool) Reset(id string) error {
	return p.update(id, func(c *cred, now time.Time, fx *effects) {
		end := func(k key, e *cooldown) {
			e.timer.Stop()
			k.set(nil)
			if active(e, now) {
				fx.emit(k.ended(e, now))
			}
			fx.changed = true
		}
		if e := c.prov.cool; e != nil {
			end(key{prov: c.prov}, e)
		}
		if e := c.cool; e != nil {
			end(key{cred: c}, e)
		}
		for _, m := range sortedKeys(c.models) {
			end(key{cred: c, model: m}, c.models[m])
		}
		if p.forgetBudgets(c, now, fx) {
			fx.changed = true
		}
		if p.forgetModelWindows(c, now, fx) {
			fx.changed = true
		}
		if p.forgetPaces(c, true) {
			fx.changed = true
		}
		if len(c.ladders) > 0 || c.prov.ladder != (ladderMem{}) {
			c.ladders = nil
			c.prov.ladder = ladderMem{}
			fx.changed = true
		}
		if n := len(c.parks); n > 0 {
			c.parks = slices.DeleteFunc(c.parks, func(pk api.Park) bool { return pk.Kind == api.ParkPayment })
			if len(c.parks) != n {
				fx.changed = true
			}
		}
		if fx.changed {
			c.reason = ""
			fx.wake = true
			e := event(api.EventCredentialUpdated, c, now)
			e.State = c.state(now)
			e.Reason = "reset"
			fx.emit(e)
		}
	})
}

// state is the credential-wide state for status and events. A credential
// cooling or parked for one model only is still ready. Requires p.mu.
func (c *cred) state(now time.Time) string {
	switch {
	case c.paused:
		return api.StatePaused
	case c.parkedAll():
		return api.StateParked
	case active(c.cool, now) || active(c.prov.cool, now):
		return api.StateCooling
	}
	return api.StateReady
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
