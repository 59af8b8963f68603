package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
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
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, rt route) {
	lim := p.limits.Load()
	rq := &request{p: p, pol: lim.pol, client: w, in: r, ctx: r.Context(), start: p.o.Clock.Now(), tool: metering.ClientApp(r.UserAgent())}
	if rt.wire == WireGemini {
		rq.pol = geminiWaits(rq.pol, rt.gemini)
	}
	var out outcome
	// Deferred, so that request_finished goes out however respond ends,
	// and before the connection is cut for an answer that failed midway.
	defer func() {
		u := rq.meter.Usage()
		ev := api.Event{
			Type: api.EventRequestFinished, Provider: rt.prov.Name, CredentialID: out.cred,
			Model: rq.info.Model, Path: rt.upath, Status: out.status, Class: string(out.class),
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
	out = p.respond(rq, rt, lim.maxBody)
}

// respond reads the request's body, admits it and walks its plan, and
// returns what the client got.
func (p *Proxy) respond(rq *request, rt route, maxBody int64) outcome {
	w, r := rq.client, rq.in
	body, sendPlain, refused := p.readRequest(rq, rt.wire, maxBody)
	if refused != nil {
		return *refused
	}
	view := rq.jsonBody(body)
	rq.info = inspect(r.Header, view)
	if rt.wire == WireGemini {
		geminiInfo(&rq.info, rt.gemini, view)
		if why := geminiModelRefused(rq.info.Model); why != "" {
			return refuse(w, rt.wire, http.StatusBadRequest, why)
		}
		if why := p.geminiUnservable(rt); why != "" {
			return refuse(w, rt.wire, http.StatusForbidden, why)
		}
	}
	if rq.info.Flaw != "" && rt.modelInBody() {
		return refuse(w, rt.wire, http.StatusBadRequest, "the body "+rq.info.Flaw+"; subpool reads the model as the upstream would, and cannot in this body: send JSON with one string \"model\"")
	}
	al, refused := rq.admit(rt, rq.info.Model) // the key's model limits and the aliases (alias.go)
	if refused != nil {
		return *refused
	}
	rw := w
	if al != nil {
		rw = al.aw // every answer names the alias
	}
	rn := rq.newRun(rw, r, rt, body, rq.info.Model, p.o.Auth)
	rn.decoded = sendPlain
	s := &serving{own: rn, alias: al, plan: policy.Plan(p.planRequest(rn, al))}
	out, ex, note := s.walk()
	if ex == nil {
		if al != nil {
			al.aw.finish(out.abort)
		}
		return out
	}
	return outcome{status: rn.exhausted(w, ex, note), class: classRefused}
}

// readRequest reads the request's body, bounded, and decodes it as its
// Content-Encoding says (rq.plain). sendPlain: the decoded body is the one
// to send. A non-nil out says the client has been answered.
func (p *Proxy) readRequest(rq *request, wire Wire, maxBody int64) (body []byte, sendPlain bool, out *outcome) {
	w, r := rq.client, rq.in
	body, err := readBody(w, r, maxBody, time.Now().Add(p.o.BodyTimeout)) // a connection deadline: wall time
	switch {
	case errors.Is(err, errTooLarge):
		return nil, false, answered(refuse(w, wire, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than max_body (%d bytes); raise max_body in config.toml if this is intended", maxBody)))
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The client stalled mid-upload: it is told, and the connection
		// closes (its read deadline stays passed).
		w.Header().Set("Connection", "close")
		writeError(w, wire, http.StatusRequestTimeout, "the request body did not arrive in time; send it again", 0, mayRetry)
		return nil, false, answered(outcome{status: http.StatusRequestTimeout, class: classRefused})
	case err != nil && clientGone(r, err):
		// The client stopped sending: nothing to answer, nothing to cool.
		return nil, false, answered(aborted(""))
	case err != nil:
		// A chunked body net/http cannot read (a chunk size that is no
		// number, a chunk extension past its bound): the client is
		// there, and told.
		w.Header().Set("Connection", "close")
		return nil, false, answered(refuse(w, wire, http.StatusBadRequest, "the request body could not be read ("+err.Error()+"); send it with a valid Content-Length or chunked Transfer-Encoding"))
	}
	plain, asCame, err := decodeBody(r.Header, body, maxBody)
	switch {
	case errors.Is(err, errTooLarge):
		return nil, false, answered(refuse(w, wire, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body decompresses to more than max_body (%d bytes); raise max_body in config.toml if this is intended", maxBody)))
	case err != nil:
		return nil, false, answered(refuse(w, wire, http.StatusBadRequest, err.Error()))
	case plain == nil:
		return body, false, nil
	}
	rq.plain = plain
	if asCame {
		return body, false, nil
	}
	return plain, true, nil
}

// answered is out, for a function that says with a non-nil outcome that
// the client has been answered.
func answered(out outcome) *outcome { return &out }

// refuse answers with subpool's own refusal, nothing sent upstream.
func refuse(w http.ResponseWriter, wire Wire, status int, msg string) outcome {
	writeError(w, wire, status, msg, 0, noRetry)
	return outcome{status: status, class: classRefused}
}

// clientGone reports a body read that failed because the client left
// or broke off mid-body, rather than because what it sent cannot be read.
func clientGone(r *http.Request, err error) bool {
	var ne net.Error
	return r.Context().Err() != nil || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.As(err, &ne)
}

// modelInBody reports a route whose body names the model: every one but
// the Gemini API's, which has it in the path, and Code Assist's calls
// other than the model methods, which name none.
func (rt route) modelInBody() bool {
	if rt.wire != WireGemini {
		return true
	}
	return rt.gemini.CodeAssist && rt.gemini.ModelMethod()
}

// planRequest is what the plan of rn's request is made from.
func (p *Proxy) planRequest(rn *run, al *aliasReq) policy.PlanRequest {
	pr := policy.PlanRequest{Provider: rn.prov.Name, Model: rn.model,
		Carries: clientWire(rn.route) != "" && rn.r.Method == http.MethodPost}
	if al != nil {
		pr.Alias = al.targets
	} else if p.o.Fallback != nil && pr.Carries {
		pr.Ladder = p.o.Fallback(rn.prov.Name, rn.model)
	}
	return pr
}
