// Package view folds the admin event stream into what the tray and the panel
// show: rows, badges, countdowns, menu lines and the notifications worth a
// person's attention. It is plain Go with no Fyne import, and time is always
// a parameter, so every decision can be tested on a fake clock.
package view

import (
	"fmt"
	"slices"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Synthetic event types: the admin client puts them on the stream itself, the
// proxy never sends them.
const (
	// EventOffline: the connection to the proxy dropped; the client keeps
	// reconnecting and sends a fresh snapshot when it is back.
	EventOffline api.EventType = "offline"
	// EventUnauthorized: the proxy refused the admin token.
	EventUnauthorized api.EventType = "unauthorized"
)

// MaxRecent is how many events the recent list keeps.
const MaxRecent = 100

// Conn is what the tray knows about its link to the proxy.
type Conn int

const (
	Connecting   Conn = iota // nothing heard yet
	Online                   // a snapshot arrived; events are live
	Offline                  // the link dropped; the status shown is the last one seen
	Unauthorized             // the proxy answers but refuses our token
)

// Model is the last snapshot patched by every event since. Apply and View
// must be called from one goroutine (or under the caller's lock); the View
// it returns is a value the UI goroutine may keep.
type Model struct {
	// Address is the proxy address shown in the menu and banners; empty
	// means the snapshot's listen address.
	Address string
	// Loc is the zone event times are written in; nil means time.Local.
	Loc *time.Location

	status     api.Status
	conn       Conn
	everOnline bool
	// stopping is set by proxy_stopping: the drop that follows is the proxy
	// shutting down on purpose, not worth a notification.
	stopping  bool
	droppedAt time.Time // when the link last went down

	// spans remembers when each cooldown started: the wire Cooldown has only
	// its end, and the countdown bar needs the total.
	spans     map[coolKey]span
	waits     map[waitKey]*wait
	fallbacks map[string]fallback // by the provider that could not serve

	recent  [MaxRecent]string
	recentN int // lines written in total; the ring holds the last MaxRecent

	// Notification bookkeeping: a flag is set when a notice went out and
	// cleared only when the condition is over, so each episode notifies once.
	reloginSent   map[string]bool // by credential id
	exhaustedSent map[string]bool // by provider
	// warned is the use each window was at when its warning went out, by
	// usageKey: a window only falls below it by resetting, which makes the
	// next crossing news again.
	warned map[string]float64
}

// coolKey names one cooldown. A model can be held by a 429 and by a spent
// request budget at once, each ending at its own time.
type coolKey struct {
	provider, cred, scope, model string
	budget                       bool
}

type span struct{ start, until time.Time }

type waitKey struct{ provider, kind string }

type wait struct {
	n     int
	since time.Time
	until time.Time // the budget's end, when the event gave one
	cred  string
	model string
}

type fallback struct {
	to string
	at time.Time
}

// Notice is a desktop notification the model decided to send.
type Notice struct {
	// Key identifies the episode ("relogin/ID", "exhausted/anthropic",
	// "offline"); the UI may use it to replace an older notice.
	Key   string
	Title string
	Body  string
}

func (m *Model) init() {
	if m.spans == nil {
		m.spans = map[coolKey]span{}
		m.waits = map[waitKey]*wait{}
		m.fallbacks = map[string]fallback{}
		m.reloginSent = map[string]bool{}
		m.exhaustedSent = map[string]bool{}
		m.warned = map[string]float64{}
	}
}

func (m *Model) loc() *time.Location {
	if m.Loc == nil {
		return time.Local
	}
	return m.Loc
}

// Conn reports the state of the link to the proxy.
func (m *Model) Conn() Conn { return m.conn }

// Apply folds one event into the model at now and returns the notifications
// it calls for (usually none).
func (m *Model) Apply(ev api.Event, now time.Time) []Notice {
	m.init()
	if ev.Time.IsZero() {
		ev.Time = now
	}
	// An exhaustion that ended silently (cooldowns ran out without an event)
	// must not mute the next one.
	m.rearm(now)
	prev := m.conn
	// Described before the change, so a removed credential still has its label.
	line := m.describe(ev)

	m.fold(ev, now)
	var usage []Notice
	switch ev.Type {
	case api.EventUsageWarning:
		usage = m.usageWarning(ev, now)
	case api.EventConfigRejected:
		usage = []Notice{configRejected(ev)}
	case api.EventHistoryProblem:
		if ev.Reason != "" {
			usage = []Notice{historyProblem(ev)}
		}
	}
	if line != "" {
		m.recent[m.recentN%MaxRecent] = m.stamp(ev.Time) + " " + line
		m.recentN++
	}
	return append(m.decide(ev, prev, now), usage...)
}

// fold changes the model's state by one event.
func (m *Model) fold(ev api.Event, now time.Time) {
	switch ev.Type {
	case api.EventSnapshot:
		m.applySnapshot(ev, now)
	case EventOffline:
		if m.conn == Online {
			m.droppedAt = ev.Time
		}
		m.conn = Offline
		// Waits in flight are the proxy's; across a gap we cannot know them.
		clear(m.waits)
	case EventUnauthorized:
		m.conn = Unauthorized
		clear(m.waits)
	case api.EventProxyStarted:
		m.stopping = false
	case api.EventProxyStopping:
		m.stopping = true
	case api.EventCooldownStarted:
		m.cooldownStarted(ev, now)
	case api.EventCooldownEnded:
		m.cooldownEnded(ev)
	case api.EventParked:
		m.park(ev, parkKind(ev))
	case api.EventReloginRequired:
		ev.Model = "" // a login is the whole credential's
		m.park(ev, api.ParkRelogin)
	case api.EventCredentialAdded:
		m.credentialAdded(ev)
	case api.EventCredentialRemoved:
		m.credentialRemoved(ev)
	case api.EventCredentialUpdated:
		m.credentialUpdated(ev)
	case api.EventWaitStarted:
		m.waitStarted(ev)
	case api.EventWaitEnded:
		m.waitEnded(ev)
	case api.EventRequestFinished:
		m.requestFinished(ev)
	case api.EventTokenRefreshed:
		if c := m.cred(ev.CredentialID); c != nil && ev.Until != nil {
			t := *ev.Until
			c.ExpiresAt = &t
		}
	case api.EventFallback:
		if ev.From != "" {
			m.fallbacks[ev.From] = fallback{to: ev.To, at: ev.Time}
		}
	case api.EventUsageUpdated:
		m.usageUpdated(ev)
	case api.EventPaceChanged:
		m.paceChanged(ev)
	case api.EventHistoryProblem:
		if m.status.History == nil {
			m.status.History = &api.HistoryStatus{}
		}
		m.status.History.Problem = ev.Reason
	case api.EventConfigRejected:
		m.status.ConfigProblem = ev.Reason
	case api.EventConfigReloaded:
		m.status.ConfigProblem = ""
	}
}

func (m *Model) applySnapshot(ev api.Event, now time.Time) {
	if ev.Snapshot != nil {
		m.status = cloneStatus(*ev.Snapshot)
	}
	m.conn = Online
	m.everOnline = true
	m.stopping = false
	clear(m.waits)
	// The pool lists a provider-wide cooldown on every credential too; keep
	// it in one place, the provider, so that its end clears it everywhere.
	for i := range m.status.Providers {
		p := &m.status.Providers[i]
		for j := range p.Credentials {
			c := &p.Credentials[j]
			c.Cooldowns = slices.DeleteFunc(c.Cooldowns, func(cd api.Cooldown) bool {
				if cd.Scope != scopeProvider {
					return false
				}
				if p.Cooldown == nil || cd.Until.After(p.Cooldown.Until) {
					x := cd
					p.Cooldown = &x
				}
				return true
			})
		}
	}
	// Cooldowns already running when we connected: their start is unknown,
	// so their bars start full at the snapshot's time. One we watched start
	// keeps its real start.
	start := m.status.Now
	if start.IsZero() {
		start = now
	}
	seen := map[coolKey]bool{}
	for i := range m.status.Providers {
		p := &m.status.Providers[i]
		if p.Cooldown != nil {
			m.keepSpan(coolKey{provider: p.Name, scope: scopeProvider}, p.Cooldown.Until, start, seen)
		}
		for j := range p.Credentials {
			c := &p.Credentials[j]
			for _, cd := range c.Cooldowns {
				m.keepSpan(keyOf(p.Name, c.ID, cd), cd.Until, start, seen)
			}
		}
	}
	for k := range m.spans {
		if !seen[k] {
			delete(m.spans, k)
		}
	}
	for id := range m.reloginSent {
		if m.cred(id) == nil {
			delete(m.reloginSent, id)
		}
	}
	m.rearmWarnings()
}

func (m *Model) keepSpan(k coolKey, until, start time.Time, seen map[coolKey]bool) {
	seen[k] = true
	if s, ok := m.spans[k]; ok && s.until.Equal(until) {
		return
	}
	m.spans[k] = span{start: start, until: until}
}

func keyOf(provider, cred string, cd api.Cooldown) coolKey {
	scope := cd.Scope
	if scope == "" {
		scope = scopeCredential
	}
	model := ""
	if scope == scopeModel {
		model = cd.Model
	}
	return coolKey{provider: provider, cred: cred, scope: scope, model: model, budget: cd.Budget}
}

const (
	scopeCredential = "credential"
	scopeModel      = "model"
	scopeProvider   = "provider"
)

func (m *Model) cooldownStarted(ev api.Event, now time.Time) {
	if ev.Until == nil {
		return
	}
	cd := api.Cooldown{Scope: ev.Scope, Model: ev.Model, Until: *ev.Until, Step: ev.Step, Steps: ev.Steps, Reason: ev.Reason, Budget: ev.Budget}
	if cd.Scope == "" {
		cd.Scope = scopeCredential
		if ev.CredentialID == "" {
			cd.Scope = scopeProvider
		}
	}
	start := ev.Time
	if start.After(cd.Until) {
		start = now
	}
	if cd.Scope == scopeProvider {
		p := m.provider(ev.Provider, true)
		p.Cooldown = &cd
		m.spans[coolKey{provider: p.Name, scope: scopeProvider}] = span{start, cd.Until}
		return
	}
	c := m.cred(ev.CredentialID)
	if c == nil {
		return
	}
	k := keyOf(c.Provider, c.ID, cd)
	i := slices.IndexFunc(c.Cooldowns, func(x api.Cooldown) bool { return keyOf(c.Provider, c.ID, x) == k })
	if i >= 0 {
		c.Cooldowns[i] = cd
	} else {
		c.Cooldowns = append(c.Cooldowns, cd)
	}
	if cd.Scope == scopeCredential && c.State == api.StateReady {
		c.State = api.StateCooling
	}
	if ev.Reason != "" {
		c.Reason = ev.Reason
	}
	m.spans[k] = span{start, cd.Until}
}

func (m *Model) cooldownEnded(ev api.Event) {
	scope := ev.Scope
	if scope == "" {
		scope = scopeCredential
		if ev.CredentialID == "" {
			scope = scopeProvider
		}
	}
	if scope == scopeProvider {
		if p := m.provider(ev.Provider, false); p != nil {
			p.Cooldown = nil
			delete(m.spans, coolKey{provider: p.Name, scope: scopeProvider})
			for j := range p.Credentials {
				c := &p.Credentials[j]
				if c.State == api.StateCooling && !hasScope(c, scopeCredential) {
					c.State = api.StateReady
				}
			}
		}
		return
	}
	c := m.cred(ev.CredentialID)
	if c == nil {
		return
	}
	k := keyOf(c.Provider, c.ID, api.Cooldown{Scope: scope, Model: ev.Model, Budget: ev.Budget})
	c.Cooldowns = slices.DeleteFunc(c.Cooldowns, func(x api.Cooldown) bool { return keyOf(c.Provider, c.ID, x) == k })
	delete(m.spans, k)
	if scope == scopeCredential && c.State == api.StateCooling {
		c.State = api.StateReady
	}
}

// parkKind reads the park kind off a parked event. The wire Event has no
// dedicated field; the hub may put it in Kind, or only the class.
func parkKind(ev api.Event) string {
	switch {
	case ev.Kind == api.ParkRelogin || ev.Kind == api.ParkPayment:
		return ev.Kind
	case ev.Class == "auth_invalid":
		return api.ParkRelogin
	}
	return api.ParkPayment
}

func (m *Model) park(ev api.Event, kind string) {
	c := m.cred(ev.CredentialID)
	if c == nil {
		return
	}
	p := api.Park{Kind: kind, Model: ev.Model, Reason: ev.Reason, Since: ev.Time}
	i := slices.IndexFunc(c.Parks, func(x api.Park) bool { return x.Kind == p.Kind && x.Model == p.Model })
	if i >= 0 {
		c.Parks[i] = p
	} else {
		c.Parks = append(c.Parks, p)
	}
	if p.Model == "" && c.State != api.StatePaused {
		c.State = api.StateParked
	}
	if ev.Reason != "" {
		c.Reason = ev.Reason
	}
}

func (m *Model) credentialAdded(ev api.Event) {
	if ev.CredentialID == "" {
		return
	}
	state := ev.State
	if state == "" {
		state = api.StateReady
	}
	if c := m.cred(ev.CredentialID); c != nil {
		// The same id again is a fresh login over an old credential.
		if ev.Label != "" {
			c.Label = ev.Label
		}
		m.setState(c, state)
		return
	}
	p := m.provider(ev.Provider, true)
	c := api.CredentialStatus{ID: ev.CredentialID, Provider: p.Name, Label: ev.Label, State: state}
	if ev.Kind == api.KindAPIKey || ev.Kind == api.KindOAuth {
		c.Kind = ev.Kind
	}
	p.Credentials = append(p.Credentials, c)
}

func (m *Model) credentialRemoved(ev api.Event) {
	for i := range m.status.Providers {
		p := &m.status.Providers[i]
		p.Credentials = slices.DeleteFunc(p.Credentials, func(c api.CredentialStatus) bool { return c.ID == ev.CredentialID })
	}
	for k := range m.spans {
		if k.cred == ev.CredentialID && k.cred != "" {
			delete(m.spans, k)
		}
	}
	delete(m.reloginSent, ev.CredentialID)
	m.rearmWarnings()
}

func (m *Model) credentialUpdated(ev api.Event) {
	c := m.cred(ev.CredentialID)
	if c == nil {
		return
	}
	if ev.Label != "" {
		c.Label = ev.Label
	}
	// The pool names two actions in Reason; each clears more than the
	// state alone says, and leaves no reason behind (see pool.Reset and
	// pool.Unpark).
	switch ev.Reason {
	case "reset":
		c.Cooldowns = nil
		c.Parks = slices.DeleteFunc(c.Parks, func(p api.Park) bool { return p.Kind == api.ParkPayment })
		c.Reason = ""
	case "unparked":
		c.Parks = nil
		c.Reason = ""
	case api.ReasonOtherToolsOn, api.ReasonOtherToolsOff:
		// `subpool tools`, the config or this tray opened the login to
		// every tool or closed it again; its last reason stays.
		c.OtherTools = ev.Reason == api.ReasonOtherToolsOn
	case "":
	default:
		// The third action: `subpool reserve` set the reserve ("reserve
		// 15%"). It changes no reason, and Until says whether it holds.
		var pct int
		if n, _ := fmt.Sscanf(ev.Reason, "reserve %d%%", &pct); n == 1 {
			c.Reserve = pct
			c.ReservedUntil = nil
		} else {
			c.Reason = ev.Reason
		}
	}
	// Until on credential_updated: the reserve holds it back until then.
	if ev.Until != nil && ev.Until.After(ev.Time) {
		t := *ev.Until
		c.ReservedUntil = &t
	}
	if ev.State != "" {
		m.setState(c, ev.State)
	}
}

// setState applies a credential-wide state from the proxy. The state is the
// proxy's word on the whole credential: "ready" means no credential-wide
// cooldown or park is left (a reset, a resume, a new login), so those go.
// Model-scoped ones are not covered by the state and stay.
func (m *Model) setState(c *api.CredentialStatus, state string) {
	c.State = state
	if state != api.StateReady {
		return
	}
	c.Cooldowns = slices.DeleteFunc(c.Cooldowns, func(x api.Cooldown) bool {
		k := keyOf(c.Provider, c.ID, x)
		if k.scope == scopeCredential {
			delete(m.spans, k)
			return true
		}
		return false
	})
	c.Parks = slices.DeleteFunc(c.Parks, func(p api.Park) bool { return p.Model == "" })
}

func (m *Model) waitStarted(ev api.Event) {
	k := waitKey{ev.Provider, ev.Kind}
	w := m.waits[k]
	if w == nil {
		w = &wait{since: ev.Time}
		m.waits[k] = w
	}
	w.n++
	w.cred, w.model = ev.CredentialID, ev.Model
	if ev.Until != nil && ev.Until.After(w.until) {
		w.until = *ev.Until
	}
}

func (m *Model) waitEnded(ev api.Event) {
	k := waitKey{ev.Provider, ev.Kind}
	if w := m.waits[k]; w != nil {
		w.n--
		if w.n <= 0 {
			delete(m.waits, k)
		}
	}
}

// requestFinished counts a request on the credential that answered it.
// The proxy's own counters count attempts, which the stream does not show
// one by one, so these drift until the next snapshot puts them right.
func (m *Model) requestFinished(ev api.Event) {
	c := m.cred(ev.CredentialID)
	if c == nil {
		return
	}
	c.Counters.Requests++
	switch ev.Class {
	case "", "ok", "client_error", "aborted":
		// Not the credential's failure: the request itself, or a client
		// that left.
	case "rate_limit":
		c.Counters.Errors++
		c.Counters.RateLimits++
	default:
		c.Counters.Errors++
	}
	// As the pool does: a success clears an old reason, unless something
	// still holds the credential back and the reason is still news.
	if ev.Class == "ok" && len(c.Parks) == 0 && len(activeCools(c, ev.Time)) == 0 {
		c.Reason = ""
	}
	t := ev.Time
	c.LastUsed = &t
}

// provider finds a provider section, creating it when create is set (a
// credential_added for a provider the snapshot did not list).
func (m *Model) provider(name string, create bool) *api.ProviderStatus {
	for i := range m.status.Providers {
		if m.status.Providers[i].Name == name {
			return &m.status.Providers[i]
		}
	}
	if !create {
		return nil
	}
	m.status.Providers = append(m.status.Providers, api.ProviderStatus{Name: name})
	return &m.status.Providers[len(m.status.Providers)-1]
}

func (m *Model) cred(id string) *api.CredentialStatus {
	if id == "" {
		return nil
	}
	for i := range m.status.Providers {
		p := &m.status.Providers[i]
		for j := range p.Credentials {
			if p.Credentials[j].ID == id {
				return &p.Credentials[j]
			}
		}
	}
	return nil
}

// cloneStatus copies every slice the model patches, so the sender's
// snapshot is never written to.
func cloneStatus(s api.Status) api.Status {
	s.Providers = slices.Clone(s.Providers)
	for i := range s.Providers {
		p := &s.Providers[i]
		if p.Cooldown != nil {
			cd := *p.Cooldown
			p.Cooldown = &cd
		}
		p.Credentials = slices.Clone(p.Credentials)
		for j := range p.Credentials {
			c := &p.Credentials[j]
			c.Cooldowns = slices.Clone(c.Cooldowns)
			c.Parks = slices.Clone(c.Parks)
		}
	}
	return s
}
