package policy

// The plan: which targets a request may be served by, in order. A request
// names a provider (by its route) and a model; an alias of the person's
// names a list of targets instead; and when the provider's pool has no
// credential in time, the fallback ladder names others. Plan turns that
// into one ordered list; the proxy's serving loop walks it, skipping what
// cannot serve, until one target answers. Every rule is a row of
// plan_test.go.

// Rung is one place a request may be carried to: a provider and the model
// to ask it for.
type Rung struct {
	Provider string
	Model    string
}

// PlanRequest is what the plan is made from.
type PlanRequest struct {
	// Provider is the route's provider; Model the model the client named.
	Provider string
	Model    string
	// Alias is the alias's targets the client may use, in order (Provider
	// never empty); nil when the model is no alias.
	Alias []Rung
	// Ladder is the fallback ladder for Provider and Model; nil for none.
	Ladder []Rung
	// Carries says the request can be carried to another provider: a
	// generation route (POST /v1/messages, /v1/responses,
	// /v1/chat/completions) whose wire the translator speaks.
	Carries bool
}

// Target is one step of the plan.
type Target struct {
	Rung
	// Detour: another provider serves, through the writer that turns its
	// answers into the client's wire.
	Detour bool
	// Check: the target serves only if its pool has a ready credential
	// now, asked without a lease (pool.Explain); otherwise it is skipped.
	Check bool
	// MayWait: the target's run may wait for its pool (a short cooldown,
	// a busy slot) instead of giving up at once.
	MayWait bool
	// Skip, when set, says why the target cannot serve this request at
	// all; the loop notes it and goes on.
	Skip string
}

// Plan orders the targets of r.
//
// Without an alias: the route's own provider first, which may wait for
// its pool (a cooldown short enough to wait out keeps a conversation on
// its model and cache), then each rung of the ladder that has a ready
// credential now (docs/fallback.md).
//
// An alias with one target is that target, as the request's own.
//
// An alias list is tried in order, each target only while it has a
// ready credential now and without waiting: a target refused with a rate
// limit yields at once to the next (issue 24). When its first target is
// the route's own provider, that target comes again last, allowed to
// wait: it is waited for only when none of the others could serve. An
// alias list takes no fallback ladder: the list is the person's ladder.
func Plan(r PlanRequest) []Target {
	if r.Alias == nil {
		plan := []Target{{Rung: Rung{r.Provider, r.Model}, MayWait: true}}
		for _, g := range r.Ladder {
			t := rung(r, g, true)
			if !t.Detour {
				// A ladder carries the request elsewhere; its own
				// provider has just had its turn.
				t.Skip = "not a provider of this proxy"
			}
			plan = append(plan, t)
		}
		if !r.Carries {
			// Nothing but the route's own provider serves it.
			plan = plan[:1]
		}
		return plan
	}
	if len(r.Alias) == 1 {
		// Another provider serves only with a ready credential now, as a
		// fallback rung does; the route's own may wait, as any request.
		t := rung(r, r.Alias[0], false)
		t.Check = t.Detour
		return []Target{t}
	}
	var plan []Target
	for _, g := range r.Alias {
		t := rung(r, g, true)
		t.MayWait = false
		plan = append(plan, t)
	}
	if first := r.Alias[0]; first.Provider == r.Provider {
		plan = append(plan, Target{Rung: first, MayWait: true})
	}
	return plan
}

// rung is g as a target of r; check says it must have a ready credential
// now.
func rung(r PlanRequest, g Rung, check bool) Target {
	t := Target{Rung: g, Check: check, MayWait: true, Detour: g.Provider != r.Provider}
	if t.Detour && !r.Carries {
		t.Skip = "this route cannot be carried to another provider"
	}
	return t
}
