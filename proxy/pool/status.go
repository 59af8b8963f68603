package pool

import (
	"slices"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Status reports every credential of a provider ("" for all) in the order
// added, without secrets. Cooldowns lists what holds each one now: its
// provider's shared cooldown (also in ProviderCooldown) first, then its
// own, then per model by name: a 429's, then a spent request budget's
// (step 0, reason "budget spent …"; model "" for the budget of requests
// that name none); State is "cooling" for the first two only.
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
			OwnTool:  api.SubscriptionTool(c.Provider, c.Kind),
			Proxy:    c.Egress,
		}
		s.OtherTools = s.OwnTool != "" && c.OtherTools
		for _, e := range [...]*cooldown{c.prov.cool, c.cool} {
			if active(e, now) {
				s.Cooldowns = append(s.Cooldowns, e.api(steps))
			}
		}
		for _, m := range modelKeys(c) {
			for _, e := range [...]*cooldown{c.models[m], c.spentFor(m)} {
				if active(e, now) {
					s.Cooldowns = append(s.Cooldowns, e.api(steps))
				}
			}
		}
		s.Paces = p.paceStatus(c, now)
		p.usageStatus(c, &s, now)
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

// modelKeys is every model c has a cooldown or a spent budget for, by
// name. Requires p.mu.
func modelKeys(c *cred) []string {
	ks := sortedKeys(c.models)
	if c.exhausted == 0 {
		return ks
	}
	for m, b := range c.buds {
		if _, ok := c.models[m]; !ok && b.spent != nil {
			ks = append(ks, m)
		}
	}
	slices.Sort(ks)
	return ks
}
