package proxy

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/pool"
)

// Model aliases ([models] in config.toml). A client asks for a name of
// the user's choosing; the alias says which provider and model serve it.
// One target just changes the model. A list is tried in order, as the
// fallback ladder is for an ordinary request: a target serves only if it
// has a ready credential now (same rule as fallback.go's detours), and the
// first target may still wait out a short cooldown when none of the others
// can serve. Whatever serves, the answer names the alias in its "model"
// field (JSON and every SSE event carrying one), so a client's context
// display, which looks its window up by that name, keeps working.

// aliasReq is one request for an alias, resolved.
type aliasReq struct {
	name    string           // what the client asked for
	targets []FallbackTarget // allowed targets, in order; Provider never ""
	first   bool             // targets[0] runs as the request's own loop
	passed  bool             // …but was passed over for now: it had no ready credential
	src     []byte           // the client's body
	aw      *aliasWriter
}

// admit applies the client key's model limits and the aliases to a run
// that has read its body. ok false: the client has been answered (a 403),
// nothing went upstream. al is nil when the model is no alias; its
// methods then do what serving does without aliases.
func (rn *run) admit() (al *aliasReq, ok bool) {
	c := clientOf(rn.r)
	var targets []FallbackTarget
	if rn.p.o.Aliases != nil {
		targets = rn.p.o.Aliases()[rn.model]
	}
	if len(targets) == 0 {
		if !c.AllowsModel(rn.model) {
			refuseModel(rn.w, rn.prov.Wire, c, rn.model)
			rn.status, rn.class = http.StatusForbidden, classRefused
			return nil, false
		}
		return nil, true
	}
	al = &aliasReq{name: rn.model, src: rn.body}
	nameOK := c.AllowsModel(rn.model)
	for _, t := range targets {
		if t.Provider == "" {
			t.Provider = rn.prov.Name
		}
		if rn.p.o.Providers[t.Provider] == nil || !c.AllowsProvider(t.Provider) || !(nameOK || c.AllowsModel(t.Model)) {
			continue
		}
		al.targets = append(al.targets, t)
	}
	if len(al.targets) == 0 {
		// A provider added to config.toml runs only after a restart, so
		// a reloaded alias may name one that does not run yet.
		writeError(rn.w, rn.prov.Wire, http.StatusForbidden, fmt.Sprintf("no target of alias %q may be used by the client key %q, or runs now (a provider added to config.toml runs from the next start); see [models] and `subpool client list`",
			rn.model, c.Name), 0, noRetry)
		rn.status, rn.class = http.StatusForbidden, classRefused
		return nil, false
	}
	al.aw = &aliasWriter{w: rn.w, alias: al.name}
	rn.w = al.aw
	if t := al.targets[0]; t.Provider == rn.prov.Name {
		body, err := withModel(rn.body, t.Model)
		if err == nil {
			rn.body, rn.model, al.first = body, t.Model, true
		}
	}
	return al, true
}

// loop runs the request's own attempt loop. For a list, the first target
// yields to the others the moment it cannot serve (no ready credential, or
// refused with a rate limit): its run does not wait for its pool, because
// another target may serve now. It gets its own loop again, waits
// included, only when none of the others could (fallback).
func (al *aliasReq) loop(rn *run) *policy.Action {
	if al == nil {
		return rn.loop()
	}
	exhausted := func() *policy.Action {
		return &policy.Action{Kind: policy.Exhausted, Status: http.StatusServiceUnavailable,
			Message: "alias " + strconv.Quote(al.name) + ": " + al.targets[0].Provider + "/" + al.targets[0].Model + " cannot serve now"}
	}
	if !al.first {
		return exhausted()
	}
	if len(al.targets) > 1 {
		al.passed = true
		if rn.p.o.Pool.Explain(al.poolRequest(rn, al.targets[0])) != nil {
			return exhausted()
		}
		rn.noWait = true
		defer func() { rn.noWait = false }()
	}
	ex := rn.loop()
	if ex == nil {
		al.passed = false
		al.aw.finish(rn.abort)
	}
	return ex
}

// fallback walks the alias's other targets in order, then, if the first
// was passed over, gives it its own loop (which may wait for it). Without
// an alias it is the fallback ladder's walk.
func (al *aliasReq) fallback(rn *run, ex *policy.Action) (note string, served bool) {
	if al == nil {
		return rn.fallback(ex)
	}
	defer func() {
		if served {
			al.aw.finish(rn.abort)
		}
	}()
	from := clientWire(rn.upath)
	reason := "alias " + strconv.Quote(al.name) + ": " + ex.Message
	var skipped []string
	for i, t := range al.targets {
		if i == 0 && al.first {
			continue
		}
		var why string
		var done bool
		switch {
		case t.Provider == rn.prov.Name:
			why, done = al.same(rn, t)
		case from == "":
			why = "this route cannot be carried to another provider"
		default:
			why, done = rn.detour(t, from, reason, skipped)
		}
		if done {
			return "", true
		}
		skipped = append(skipped, t.Provider+"/"+t.Model+": "+why)
	}
	if al.passed && rn.ctx.Err() == nil {
		// Nobody else could serve: the first target's own loop, waits
		// included. Its refusal is the one the client gets, so it
		// replaces ex, which serving writes.
		ex2 := rn.loop()
		if ex2 == nil {
			return "", true
		}
		*ex = *ex2
	}
	if len(skipped) == 0 {
		return "", false
	}
	return "; alias " + strconv.Quote(al.name) + " tried: " + strings.Join(skipped, "; "), false
}

// same serves the request on another model of the client's own provider:
// the ordinary loop, no translation.
func (al *aliasReq) same(rn *run, t FallbackTarget) (why string, done bool) {
	if u := rn.p.o.Pool.Explain(al.poolRequest(rn, t)); u != nil {
		return u.Error(), false
	}
	body, err := withModel(al.src, t.Model)
	if err != nil {
		return err.Error(), false
	}
	tr := &run{request: rn.request, w: rn.w, r: rn.r, prov: rn.prov, upath: rn.upath, body: body, model: t.Model, auth: rn.auth}
	if ex := tr.loop(); ex != nil {
		return ex.Message, false
	}
	rn.fallbackTo = t.Provider + "/" + t.Model
	return "", true
}

func (al *aliasReq) poolRequest(rn *run, t FallbackTarget) pool.PickRequest {
	return pool.PickRequest{Provider: t.Provider, Model: t.Model, Tool: rn.tool}
}
