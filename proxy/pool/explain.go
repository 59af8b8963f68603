package pool

// Explain answers "could Pick(req) give a lease now, and if not, why and
// until when" without taking one: it returns nil exactly when Pick would
// return a lease (a guessed outage's probe included), else the
// *Unavailable Pick would return. It changes nothing: no lease, no request
// budget spent, no affinity bound, no probe slot used, no event. Fallback
// asks it before detouring to another provider; a check that took a lease
// would spend the budget of the request it is checking for.
func (p *Pool) Explain(req PickRequest) *Unavailable {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	list, barred := forTool(p.listLocked(req.Provider), req.Tool, now)
	for _, c := range list {
		if p.check(c, req.Model, req.Exclude, now) == blockNone {
			return nil
		}
	}
	slot, probe := p.outageProbe(req, list, now)
	if probe != nil {
		return nil
	}
	u := p.unavailable(req.Provider, req.Model, list, req.Exclude, now, slot)
	u.bar(barred, req.Tool, now)
	return u
}
