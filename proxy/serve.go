package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/metering"
	"github.com/subpool/subpool/proxy/policy"
)

// classRefused is the class of an answer subpool wrote itself.
const classRefused = classify.Class("refused")

// serve answers one routed request: its plan (policy.Plan) walked by the
// serving loop (plan.go): the client's provider, an alias's targets, the
// fallback ladder. Whatever happens, request_finished goes out.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, prov *Provider, upath string) {
	lim := p.limits.Load()
	rq := &request{p: p, pol: lim.pol, client: w, in: r, ctx: r.Context(), start: p.o.Clock.Now(), tool: metering.ClientApp(r.UserAgent())}
	if prov.Wire == "gemini" {
		rq.pol = geminiWaits(rq.pol, upath)
	}
	var out outcome
	// Deferred, so that request_finished goes out however answer ends,
	// and before the connection is cut for an answer that failed midway.
	defer func() {
		u := rq.meter.Usage()
		ev := api.Event{
			Type: api.EventRequestFinished, Provider: prov.Name, CredentialID: out.cred,
			Model: rq.info.Model, Path: upath, Status: out.status, Class: string(out.class),
			Attempts: rq.attempts, LatencyMS: p.o.Clock.Now().Sub(rq.start).Milliseconds(),
			Client: clientName(r), ClientApp: rq.tool,
			CredentialKind: out.credKind, ServedModel: out.servedModel, FallbackTo: out.fallbackTo,
			WaitedMS:    rq.waitedTotal.Milliseconds(),
			InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead, CacheWriteTokens: u.CacheWrite,
		}
		if !rq.firstByte.IsZero() {
			ev.TTFBMS = rq.firstByte.Sub(rq.start).Milliseconds()
		}
		p.o.Events.Emit(ev)
		if out.abort {
			panic(http.ErrAbortHandler)
		}
	}()
	out = p.answer(rq, prov, upath, lim.maxBody)
}

// answer reads the request's body, admits it and walks its plan, and
// returns what the client got.
func (p *Proxy) answer(rq *request, prov *Provider, upath string, maxBody int64) outcome {
	w, r := rq.client, rq.in
	body, err := readBody(w, r, maxBody, time.Now().Add(p.o.BodyTimeout)) // a connection deadline: wall time
	switch {
	case errors.Is(err, errTooLarge):
		writeError(w, prov.Wire, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than max_body (%d bytes); raise max_body in config.toml if this is intended", maxBody), 0, noRetry)
		return outcome{status: http.StatusRequestEntityTooLarge, class: classRefused}
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The client stalled mid-upload: it is told, and the connection
		// closes (its read deadline stays passed).
		w.Header().Set("Connection", "close")
		writeError(w, prov.Wire, http.StatusRequestTimeout, "the request body did not arrive in time; send it again", 0, mayRetry)
		return outcome{status: http.StatusRequestTimeout, class: classRefused}
	case err != nil:
		// The client stopped sending: nothing to answer, nothing to cool.
		return aborted("")
	}
	view := body
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") && len(body) > 0 {
		plain, err := gunzip(body, maxBody)
		switch {
		case errors.Is(err, errTooLarge):
			writeError(w, prov.Wire, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body decompresses to more than max_body (%d bytes); raise max_body in config.toml if this is intended", maxBody), 0, noRetry)
			return outcome{status: http.StatusRequestEntityTooLarge, class: classRefused}
		case err == nil:
			rq.plain, view = plain, plain
		}
		// A body that says gzip and is not goes on as it came: the
		// upstream judges it.
	}
	rq.info = inspect(r.Header, view)
	if prov.Wire == "gemini" {
		geminiInfo(&rq.info, upath, view)
		if why := p.geminiUnservable(prov, upath); why != "" {
			writeError(w, prov.Wire, http.StatusForbidden, why, 0, noRetry)
			return outcome{status: http.StatusForbidden, class: classRefused}
		}
	}
	rn := rq.newRun(w, r, prov, upath, body, rq.info.Model, p.o.Auth)
	al, refused := rn.admit() // the key's model limits and the aliases (alias.go)
	if refused != nil {
		return *refused
	}
	s := &serving{own: rn, alias: al, plan: policy.Plan(p.planRequest(rn, al))}
	out, ex, note := s.walk()
	if ex == nil {
		if al != nil {
			al.aw.finish(out.abort)
		}
		return out
	}
	rn.setHeaders(w.Header(), "")
	writeError(w, prov.Wire, ex.Status, ex.Message+note, ex.RetryAfter, retryHint(ex.Final))
	return outcome{status: ex.Status, class: classRefused}
}

// planRequest is what the plan of rn's request is made from.
func (p *Proxy) planRequest(rn *run, al *aliasReq) policy.PlanRequest {
	pr := policy.PlanRequest{Provider: rn.prov.Name, Model: rn.model,
		Carries: clientWire(rn.upath) != "" && rn.r.Method == http.MethodPost}
	if al != nil {
		pr.Alias = al.targets
	} else if p.o.Fallback != nil && pr.Carries {
		pr.Ladder = p.o.Fallback(rn.prov.Name, rn.model)
	}
	return pr
}
