package pool

import (
	"slices"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Status reports every credential of a provider ("" for all) in the order
// added, without secrets. Cooldowns lists what holds each one now: its
// provider's shared cooldown (also in ProviderCooldown) first, then its
// own, then a spent request budget's (scope credential, step 0, reason
// "budget spent …"), then per model by name; State is "cooling" for all
// but the last.
// The slice is never nil, so it encodes as [] when empty.
func (p *Pool) Status(provider string) []api.CredentialStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	steps := len(p.lad.steps)
	list := p.listLocked(provider)
	out := make([]api.CredentialStatus, 0, len(list))
	for _, c := range list {
		s := api.CredentialStatus{
			ID:       c.ID,
			Provider: c.Provider,
			Label:    c.Label,
			Kind:     c.Kind,
			Source:   c.Source,
			State:    c.state(now),
			Parks:    slices.Clone(c.parks),
			Reason:   c.reason,
			Usage:    c.util,
			Counters: c.counters,
			InFlight: c.inFlight,
		}
		for _, e := range [...]*cooldown{c.prov.cool, c.cool, c.spent} {
			if active(e, now) {
				s.Cooldowns = append(s.Cooldowns, e.api(steps))
			}
		}
		for _, m := range sortedKeys(c.models) {
			if e := c.models[m]; active(e, now) {
				s.Cooldowns = append(s.Cooldowns, e.api(steps))
			}
		}
		s.LastUsed = timePtr(c.lastUsed)
		s.ExpiresAt = timePtr(c.expiry)
		out = append(out, s)
	}
	return out
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
