package pool

import (
	"slices"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// A region refusal is about the address a request leaves from, not about
// the credential: every credential of the provider that leaves from the
// same egress would meet it, so all of them are parked at the first one,
// and the requests after it are answered by subpool without an upstream
// call. When no credential has a proxy of its own, that is the whole
// provider. Only another egress cures it: a new [network] proxy
// (UnparkEgress) or a credential's own proxy changing (Add).

// parkRegion parks id and every credential of its provider sharing its
// egress, each as api.ParkRegion. Unknown ids are ignored.
func (p *Pool) parkRegion(id, reason string) {
	p.mu.Lock()
	c := p.byID[id]
	if c == nil {
		p.mu.Unlock()
		return
	}
	now := p.clk.Now()
	var fx effects
	for _, o := range c.prov.creds {
		if o.Egress == c.Egress {
			p.parkLocked(o, "", api.ParkRegion, reason, now, &fx)
		}
	}
	p.unlock(&fx)
}

// UnparkEgress ends the region parks of every credential leaving from
// egress ("" for the shared one): it has changed, and the new one may be
// served. Each credential unparked emits credential_updated.
func (p *Pool) UnparkEgress(egress string) {
	p.mu.Lock()
	now := p.clk.Now()
	var fx effects
	for _, c := range p.creds {
		if c.Egress == egress {
			dropRegionParks(c, now, &fx)
		}
	}
	p.unlock(&fx)
}

// dropRegionParks clears c's region parks, if it has any. Requires p.mu.
func dropRegionParks(c *cred, now time.Time, fx *effects) {
	n := len(c.parks)
	c.parks = slices.DeleteFunc(c.parks, func(pk api.Park) bool { return pk.Kind == api.ParkRegion })
	if len(c.parks) == n {
		return
	}
	c.reason = ""
	if len(c.parks) > 0 {
		c.reason = c.parks[len(c.parks)-1].Reason
	}
	fx.changed, fx.wake = true, true
	e := event(api.EventCredentialUpdated, c, now)
	e.State = c.state(now)
	e.Reason = "unparked: the egress changed"
	fx.emit(e)
}

// regionAdvice says what cures a region park of c.
func regionAdvice(c *cred) string {
	if c.Egress != "" {
		return "the provider refuses the location of this credential's proxy " + c.Egress +
			": log in or add it again with another --proxy URL, or remove its own to use [network] proxy"
	}
	return "the provider refuses this network's location: set [network] proxy in config.toml (http:// or socks5://), or give the credential its own with --proxy URL"
}
