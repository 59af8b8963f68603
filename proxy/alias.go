package proxy

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/subpool/subpool/proxy/policy"
)

// Model aliases ([models] in config.toml). A client asks for a name of
// the user's choosing; the alias says which provider and model serve it.
// One target just changes the model. A list is tried in order, as the
// plan says (policy.Plan): each target while it has a ready credential,
// none waiting, then the first once more, allowed to wait. Whatever
// serves, the answer names the alias in its "model" field (JSON and every
// SSE event carrying one), so a client's context display, which looks its
// window up by that name, keeps working.

// aliasReq is one request for an alias, resolved.
type aliasReq struct {
	name    string        // what the client asked for
	targets []policy.Rung // allowed targets, in order; Provider never ""
	aw      *rewriter     // a renamer
}

// admit applies the client key's model limits and the aliases to rq on
// route rt, whose body names model. A non-nil refused says the client has
// been answered (a 403), nothing went upstream. al is nil when the model
// is no alias; else its renamer is the writer the request's runs write
// to.
func (rq *request) admit(rt route, model string) (al *aliasReq, refused *outcome) {
	w := rq.client
	c := clientOf(rq.in)
	var targets []FallbackTarget
	if rq.p.o.Aliases != nil {
		targets = rq.p.o.Aliases()[model]
	}
	if len(targets) == 0 {
		if !c.AllowsModel(model) {
			refuseModel(w, rt.wire, c, model)
			return nil, &outcome{status: http.StatusForbidden, class: classRefused}
		}
		if model == "" && len(c.Models) > 0 && rt.modelInBody() {
			// A body naming no model leaves the choice to the upstream,
			// and some choose one themselves: a limited key names its
			// model.
			writeError(w, rt.wire, http.StatusForbidden, fmt.Sprintf("the client key %q is limited to models %s, and this request names none; put a \"model\" in the body",
				c.Name, strings.Join(c.Models, ", ")), 0, noRetry)
			return nil, &outcome{status: http.StatusForbidden, class: classRefused}
		}
		return nil, nil
	}
	al = &aliasReq{name: model}
	nameOK := c.AllowsModel(model)
	for _, t := range targets {
		if t.Provider == "" {
			t.Provider = rt.prov.Name
		}
		if rq.p.o.Providers[t.Provider] == nil || !c.AllowsProvider(t.Provider) || !(nameOK || c.AllowsModel(t.Model)) {
			continue
		}
		al.targets = append(al.targets, t)
	}
	if len(al.targets) == 0 {
		// A provider added to config.toml runs only after a restart, so
		// a reloaded alias may name one that does not run yet.
		writeError(w, rt.wire, http.StatusForbidden, fmt.Sprintf("no target of alias %q may be used by the client key %q, or runs now (a provider added to config.toml runs from the next start); see [models] and `subpool client list`",
			model, c.Name), 0, noRetry)
		return nil, &outcome{status: http.StatusForbidden, class: classRefused}
	}
	al.aw = newRewriter(w, renamer{al.name})
	al.aw.maxHold = maxRewrite
	return al, nil
}
