package pool

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// StateVersion is the State layout this package writes and reads.
const StateVersion = 1

// ErrStateVersion is returned by Restore for a State it cannot read.
var ErrStateVersion = errors.New("unsupported pool state version")

// State is what the pool keeps across a restart: cooldowns, ladder
// memory, parks, pauses and the usage counters. Not utilization (the
// upstream says it again) or anything secret; credentials themselves are
// the owner's (config and keychain).
//
// The counters change with every request, so they do not call OnChange:
// they go into the file with the next change that does, and on stop. A
// crash loses at most the requests counted since that write.
// It encodes to JSON as is; the owner writes it (atomically) when
// OnChange says so.
type State struct {
	Version     int                        `json:"version"`
	Credentials map[string]CredentialState `json:"credentials,omitempty"` // by credential id
	Providers   map[string]ProviderState   `json:"providers,omitempty"`   // by provider name
}

// CredentialState is one credential's part of State.
type CredentialState struct {
	Paused    bool            `json:"paused,omitempty"`
	Cooldowns []CooldownState `json:"cooldowns,omitempty"`
	Ladders   []LadderState   `json:"ladders,omitempty"`
	Parks     []api.Park      `json:"parks,omitempty"`
	// Reserve is the credential's own reserve in percent (SetReserve),
	// absent when it follows [usage] reserve.
	Reserve *int `json:"reserve,omitempty"`
	// Counters are the credential's requests, errors and rate limits since
	// it was added (CONTRACT.md: the state file keeps usage counters).
	Counters *api.Counters `json:"counters,omitempty"`
}

// ProviderState is a provider's shared cooldown and its ladder.
type ProviderState struct {
	Cooldown *CooldownState `json:"cooldown,omitempty"`
	Ladder   *LadderState   `json:"ladder,omitempty"`
}

// CooldownState is one cooldown.
type CooldownState struct {
	Scope  Scope     `json:"scope"`
	Model  string    `json:"model,omitempty"`
	Until  time.Time `json:"until"`
	Step   int       `json:"step"`
	Reason string    `json:"reason,omitempty"`
	// Window is the quota window the cooldown waits on, when known: a
	// report after the restart that shows it has room still ends it.
	Window string `json:"window,omitempty"`
}

// LadderState is what one key remembers of its hits.
type LadderState struct {
	Scope   Scope     `json:"scope"`
	Model   string    `json:"model,omitempty"`
	Hits    int       `json:"hits"`
	LastHit time.Time `json:"last_hit"`
}

// State returns a snapshot to persist. Cooldowns that have run out and
// ladder memory that no longer matters are left out.
func (p *Pool) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	s := State{Version: StateVersion}
	for _, c := range p.creds {
		var cs CredentialState
		cs.Paused = c.paused
		cs.Parks = slices.Clone(c.parks)
		if c.usage != nil && c.usage.set {
			r := c.usage.reserve
			cs.Reserve = &r
		}
		if active(c.cool, now) {
			cs.Cooldowns = append(cs.Cooldowns, cooldownState(c.cool))
		}
		for _, m := range sortedKeys(c.models) {
			if e := c.models[m]; active(e, now) {
				cs.Cooldowns = append(cs.Cooldowns, cooldownState(e))
			}
		}
		for _, m := range sortedKeys(c.ladders) {
			if mem := c.ladders[m]; !p.lad.forgotten(mem, now) {
				k := key{cred: c, model: m}
				cs.Ladders = append(cs.Ladders, LadderState{Scope: k.scope(), Model: m, Hits: mem.hits, LastHit: mem.last})
			}
		}
		if c.counters != (api.Counters{}) {
			n := c.counters
			cs.Counters = &n
		}
		if cs.Paused || len(cs.Parks) > 0 || len(cs.Cooldowns) > 0 || len(cs.Ladders) > 0 || cs.Reserve != nil || cs.Counters != nil {
			if s.Credentials == nil {
				s.Credentials = map[string]CredentialState{}
			}
			s.Credentials[c.ID] = cs
		}
	}
	for name, pr := range p.provs {
		var ps ProviderState
		if active(pr.cool, now) {
			cd := cooldownState(pr.cool)
			ps.Cooldown = &cd
		}
		if !p.lad.forgotten(pr.ladder, now) {
			ps.Ladder = &LadderState{Scope: ScopeProvider, Hits: pr.ladder.hits, LastHit: pr.ladder.last}
		}
		if ps.Cooldown != nil || ps.Ladder != nil {
			if s.Providers == nil {
				s.Providers = map[string]ProviderState{}
			}
			s.Providers[name] = ps
		}
	}
	return s
}

func cooldownState(e *cooldown) CooldownState {
	return CooldownState{Scope: e.scope, Model: e.model, Until: e.until, Step: e.step, Reason: e.reason, Window: e.window}
}

// Restore loads a State written by State, normally once at start after the
// credentials are added. Entries for credentials or providers the pool
// does not hold are ignored, cooldowns that ended meanwhile are dropped,
// and ladder memory is kept, so a key that was hit just before a restart
// climbs on its next hit. What Restore sets replaces the pool's pauses,
// parks and ladders for those credentials; a cooldown already held that
// lasts longer is kept. Restore emits no events and does not call
// OnChange: the state it loads is already on disk, and the tray gets a
// snapshot when it connects.
func (p *Pool) Restore(s State) error {
	if s.Version == 0 && len(s.Credentials) == 0 && len(s.Providers) == 0 {
		return nil // the zero State: no state file yet
	}
	if s.Version != StateVersion {
		return fmt.Errorf("%w %d (this build reads %d)", ErrStateVersion, s.Version, StateVersion)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	for id, cs := range s.Credentials {
		if c := p.byID[id]; c != nil {
			p.restoreCred(c, cs, now)
		}
	}
	for name, ps := range s.Providers {
		pr := p.provs[name]
		if pr == nil {
			continue
		}
		if ps.Cooldown != nil {
			p.restoreCooldown(key{prov: pr}, *ps.Cooldown, now)
		}
		pr.ladder = ladderMem{}
		if l := ps.Ladder; l != nil {
			if mem := (ladderMem{hits: l.Hits, last: l.LastHit}); !p.lad.forgotten(mem, now) {
				pr.ladder = mem
			}
		}
	}
	return nil
}

// restoreCred sets c's pause, reserve, parks, cooldowns and ladders from
// its saved state. Requires p.mu.
func (p *Pool) restoreCred(c *cred, cs CredentialState, now time.Time) {
	c.paused = cs.Paused
	if cs.Counters != nil {
		c.counters = *cs.Counters
	}
	if cs.Reserve != nil {
		u := c.usageLocked()
		u.reserve, u.set = min(max(*cs.Reserve, 0), 99), true
	} else if c.usage != nil {
		c.usage.set = false
	}
	c.parks = nil
	for _, pk := range cs.Parks {
		if pk.Kind == api.ParkRelogin {
			pk.Model = ""
		}
		if !slices.ContainsFunc(c.parks, func(x api.Park) bool { return x.Kind == pk.Kind && x.Model == pk.Model }) {
			c.parks = append(c.parks, pk)
		}
	}
	for _, cd := range cs.Cooldowns {
		switch {
		case cd.Scope == ScopeCredential && cd.Model == "":
			p.restoreCooldown(key{cred: c}, cd, now)
		case cd.Scope == ScopeModel && cd.Model != "":
			p.restoreCooldown(key{cred: c, model: cd.Model}, cd, now)
		}
	}
	c.ladders = nil
	for _, l := range cs.Ladders {
		mem := ladderMem{hits: l.Hits, last: l.LastHit}
		valid := (l.Scope == ScopeCredential && l.Model == "") || (l.Scope == ScopeModel && l.Model != "")
		if !valid || p.lad.forgotten(mem, now) {
			continue
		}
		key{cred: c, model: l.Model}.setMemory(mem)
	}
}

// restoreCooldown installs a saved cooldown unless it has run out or the
// key already holds a longer one. Requires p.mu.
func (p *Pool) restoreCooldown(k key, cd CooldownState, now time.Time) {
	if !now.Before(cd.Until) {
		return
	}
	if cur := k.get(); active(cur, now) && !cd.Until.After(cur.until) {
		return
	}
	p.install(k, &cooldown{scope: k.scope(), model: k.model, until: cd.Until, step: cd.Step, reason: cd.Reason, window: cd.Window}, now)
}
