package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/pool"
)

// serving walks a request's plan (policy.Plan), as caddy's proxy loop
// walks its upstreams: a target that cannot serve is skipped with its
// reason, one that can runs the attempt loop, and the walk ends with the
// first answer. The loop decides nothing of its own: the plan says which
// targets, in what order, which must have a ready credential and which may
// wait.
type serving struct {
	own   *run      // the request as the client sent it, on its route's provider
	alias *aliasReq // nil when the model is no alias
	plan  []policy.Target

	// ran is the run on the route's own provider and first model, kept
	// for a later turn of the same target (an alias list's last, waiting
	// one), so that what it learned (credentials tried) carries over.
	ran *run
	// ex is the refusal the client gets when no target serves: the last
	// one a target on the route's own provider gave, else the plan's own.
	ex      *policy.Action
	skipped []string
}

// newRun is the one way a run is made: the attempt loop of rq on one
// provider, writing to w.
func (rq *request) newRun(w http.ResponseWriter, r *http.Request, rt route, body []byte, model string, au auth.Authenticator) *run {
	return &run{request: rq, w: w, r: r, route: rt, body: body, model: model, auth: au}
}

// walk serves the plan. When the client has its answer (or left), ex is
// nil and out says what it got; otherwise nothing was written, and the
// refusal to write comes back with a note per target that could not serve.
func (s *serving) walk() (out outcome, ex *policy.Action, note string) {
	rn := s.own
	for _, t := range s.plan {
		if rn.ctx.Err() != nil {
			return aborted(""), nil, ""
		}
		why, out := s.serve(t)
		if out != nil {
			return *out, nil, ""
		}
		if why != "" {
			s.skipped = append(s.skipped, s.label(t)+": "+why)
		}
	}
	if rn.ctx.Err() != nil {
		return aborted(""), nil, ""
	}
	if s.ex == nil {
		s.ex = &policy.Action{Kind: policy.Exhausted, Status: http.StatusServiceUnavailable}
		if s.alias != nil {
			first := s.alias.targets[0]
			s.ex.Message = "alias " + strconv.Quote(s.alias.name) + ": " + first.Provider + "/" + first.Model + " cannot serve now"
		}
	}
	return outcome{}, s.ex, s.note()
}

// serve runs one target. A non-nil out: the client has an answer or left.
// Else why says what kept the target from serving ("" when it is not
// worth a note: the request's own first turn, whose refusal is the
// answer's message).
func (s *serving) serve(t policy.Target) (why string, out *outcome) {
	rn := s.own
	if t.Skip != "" {
		return t.Skip, nil
	}
	if t.Check {
		// Asked without a lease: a look that spends no request budget.
		if u := rn.p.o.Pool.Explain(pool.PickRequest{Provider: t.Provider, Model: t.Model, Tool: rn.tool}); u != nil {
			if t.Detour && u.Total == 0 {
				return notLoggedIn(t.Provider), nil
			}
			return u.Error(), nil
		}
	}
	if t.Detour {
		from := clientWire(rn.route)
		reason := s.reason()
		return rn.detour(t, from, reason, s.skipped)
	}
	tr, err := s.runOn(t)
	if err != nil {
		return err.Error(), nil
	}
	var res outcome
	var ex *policy.Action
	if tr.reshapes() {
		// A credential may need the request in another wire (reshape.go).
		res, ex = tr.loopReshaped(t.MayWait)
	} else {
		res, ex = tr.loop(t.MayWait)
	}
	if ex == nil {
		if tr != s.ran {
			res.fallbackTo = t.Provider + "/" + t.Model
		}
		return "", &res
	}
	if tr == s.ran {
		// The request's own target: its refusal is the one the client
		// gets when nobody serves, and it is no note of its own.
		s.ex = ex
		return "", nil
	}
	return ex.Message, nil
}

// runOn is the run for a target on the route's own provider: the
// request's own run for its first target, else a run asking for the
// target's model (an alias list's other model of the same provider).
func (s *serving) runOn(t policy.Target) (*run, error) {
	rn := s.own
	first := s.plan[0].Rung
	if s.ran != nil && t.Rung == first {
		return s.ran, nil
	}
	if t.Rung == first && t.Model == rn.model {
		// The request as it came: its own run serves it.
		s.ran = rn
		return rn, nil
	}
	body, decoded := rn.body, false
	if t.Model != rn.model {
		b, err := withModel(rn.jsonBody(rn.body), t.Model)
		if err != nil {
			return nil, err
		}
		body, decoded = b, rn.plain != nil
	}
	tr := rn.request.newRun(rn.w, rn.r, rn.route, body, t.Model, rn.auth)
	tr.decoded = decoded
	if t.Rung == first {
		s.ran = tr
	}
	return tr, nil
}

// label names a target in the refusal's note: the provider for a fallback
// rung, provider/model for an alias's target.
func (s *serving) label(t policy.Target) string {
	if s.alias != nil {
		return t.Provider + "/" + t.Model
	}
	return t.Provider
}

// reason is why the request left its own target, for the fallback event.
func (s *serving) reason() string {
	msg := ""
	if s.ex != nil {
		msg = s.ex.Message
	}
	if s.alias != nil {
		return "alias " + strconv.Quote(s.alias.name) + ": " + msg
	}
	return msg
}

// note is the refusal's tail: what each target that could not serve said.
func (s *serving) note() string {
	if len(s.skipped) == 0 {
		return ""
	}
	if s.alias != nil {
		return "; alias " + strconv.Quote(s.alias.name) + " tried: " + strings.Join(s.skipped, "; ")
	}
	return "; no fallback: " + strings.Join(s.skipped, "; ")
}
