package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/metering"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/pool"
	"github.com/subpool/subpool/proxy/sse"
)

// maxErrorBody bounds how much of a refusal is read to classify it; the
// rest is passed on to the client unread.
const maxErrorBody = 64 << 10

// request is one client request and what it has cost so far. The bounds
// (attempts, waits, the capacity budget) are per client request, whichever
// provider serves it, so a fallback run shares them.
type request struct {
	p   *Proxy
	pol policy.Config // as the proxy was tuned when the request came in
	// client and in are the client's connection and request as they
	// came; a run's w and r are what its target writes to and sees.
	client http.ResponseWriter
	in     *http.Request
	ctx    context.Context
	start  time.Time
	info   requestInfo
	// plain is the body decoded when the client sent it compressed
	// (Content-Encoding: gzip): read for the model, and sent in its place
	// where the body is rewritten (an alias's model, a translation). nil
	// when the body came as it is.
	plain []byte
	// tool is the tool the request comes from (api.ToolClaudeCode…), by
	// its User-Agent: a subscription login serves only its own tool.
	tool string

	attempts int
	waited   policy.Waited
	capSince time.Time // the first capacity answer
	capWaits int

	// What the answer cost, for request_finished.
	firstByte   time.Time // the first byte of the answer written to the client
	waitedTotal time.Duration
	meter       metering.Meter // the usage the upstream reported in the answer delivered
	// committed: the client has a stream's status and headers, and
	// nothing of its body yet (run.commit).
	committed bool
}

// outcome is what the client finally got: the value a run returns when
// the request is over, from which request_finished is filled (serve.go).
type outcome struct {
	status      int
	class       classify.Class
	cred        string
	credKind    string
	servedModel string
	fallbackTo  string
	// abort: a JSON answer failed after its headers went out; the
	// connection is cut once request_finished is out.
	abort bool
}

// aborted is the outcome of a request whose client went away.
func aborted(credID string) outcome { return outcome{class: classify.Aborted, cred: credID} }

// run is the attempt loop on one provider: the client's, or a fallback
// target. It carries out the policy's actions and decides nothing itself.
type run struct {
	*request
	w       http.ResponseWriter // the client, or a translating writer
	r       *http.Request
	route   // its provider and path: a detour's are its target's
	body    []byte
	model   string
	auth    auth.Authenticator
	profile *classify.Profile // the current attempt's rules
	// via is the detour whose wire each attempt's request is put in, by
	// its credential (outbound); nil when the request goes in its own.
	via *detour

	// tried is what the last loop learned, handed to the next turn of the
	// same run (a plan's waiting turn of its first target): only loop
	// reads and writes it.
	tried tries
	// decoded: body is the request's plain form of a compressed body, so
	// the client's Content-Encoding does not go with it.
	decoded bool
}

// tries is the attempt loop's bookkeeping: a local of loop, changed only
// there, by the next value each attempt returns.
type tries struct {
	pin        string          // the credential the next lease tries first
	lastCred   string          // the last attempt's, for the rotated event
	lastReason string          // why the last credential did not serve
	exclude    map[string]bool // credentials this request no longer tries
	refreshed  map[string]bool
	retries    map[string]int
}

// nextKind is what the attempt loop does after an attempt.
type nextKind int

const (
	rotate  nextKind = iota // to another credential
	again                   // to the same credential (pin)
	waitFor                 // to the same credential after a capacity wait
	done                    // the client has its answer, or left
)

// next is an attempt's result as the loop applies it: every change of the
// loop's state comes from one of these.
type next struct {
	do      nextKind
	cred    string        // the credential the attempt went to
	reason  string        // the last reason from now on; "" keeps it
	exclude bool          // rotate: the request leaves cred out from now on
	delay   time.Duration // waitFor: how long
	retried bool          // a retry in place on cred, counted against its retries
	refresh bool          // cred's token was renewed for this request
	later   *laterCool    // a cooldown recorded when the loop ends
	out     outcome       // done: what the client got
}

func ended(out outcome) next { return next{do: done, out: out} }

// laterCool is a policy.Action.CoolLater kept for the end of the loop.
type laterCool struct {
	cred, reason string
	cool         policy.Cool
}

// coolLater records the cooldowns kept for the end of the loop.
func (rn *run) coolLater(later []laterCool) {
	for _, l := range later {
		rn.p.o.Pool.CoolDown(l.cred, rn.model, pool.Scope(l.cool.Scope), l.cool.RetryAfter, l.reason)
	}
}

// loop runs attempts until the client has an answer or has left (ex nil,
// and out says what the client got), or until no credential of the
// provider can serve the request in time: then it returns the Exhausted
// action, having written nothing, so that serving may detour to another
// provider. mayWait false: another target of the request may serve, so
// the loop gives up at once when its pool has nothing ready instead of
// waiting for it.
//
// As in caddy's proxy loop, the bookkeeping (t) is this function's: each
// attempt returns a next value and only this function applies it.
func (rn *run) loop(mayWait bool) (out outcome, ex *policy.Action) {
	t := rn.tried
	var later []laterCool
	defer func() { rn.coolLater(later); rn.tried = t }()
	for {
		if rn.ctx.Err() != nil {
			return aborted(""), nil
		}
		lease, err := rn.lease(t, mayWait)
		t.pin = ""
		if err != nil {
			return rn.unleased(err)
		}
		cred := lease.Credential
		if t.lastCred != "" && cred.ID != t.lastCred {
			rn.emit(api.Event{Type: api.EventRotated, Provider: rn.prov.Name, CredentialID: cred.ID,
				From: t.lastCred, To: cred.ID, Reason: t.lastReason, Model: rn.model})
		}
		t.lastCred = cred.ID
		nx := rn.try(lease, t.retries[cred.ID], t.refreshed[cred.ID])
		if nx.reason != "" {
			t.lastReason = nx.reason
		}
		if nx.retried {
			t.retries = with(t.retries, nx.cred, t.retries[nx.cred]+1)
		}
		if nx.refresh {
			t.refreshed = with(t.refreshed, nx.cred, true)
		}
		if nx.later != nil {
			later = append(later, *nx.later)
		}
		switch nx.do {
		case done:
			return nx.out, nil
		case rotate:
			if nx.exclude {
				t.exclude = with(t.exclude, nx.cred, true)
			}
		case again:
			t.pin = nx.cred
		case waitFor:
			rn.capWaits++
			if rn.wait(api.WaitCapacity, nx.cred, nx.delay, t.lastReason, nil) != nil {
				return aborted(""), nil
			}
			t.pin = nx.cred
		}
	}
}

// unleased is how the loop ends when lease fails: the client left, or no
// credential can serve in time (ex, for the plan walk to take elsewhere).
func (rn *run) unleased(err error) (out outcome, ex *policy.Action) {
	var exh *exhaustedError
	switch {
	case !errors.As(err, &exh):
		return aborted(""), nil // the client left
	case rn.committed:
		// The client already has this stream's headers: the refusal goes
		// in the stream, and no other provider takes over an answer
		// begun here.
		a := exh.act
		return rn.fail("", a.Status, a.Message, a.RetryAfter, retryHint(a.Final)), nil
	}
	return outcome{}, &exh.act
}

// with sets m[k] = v, making m when it is nil.
func with[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

// try makes one attempt on lease's credential, which has been retried in
// place retries times and refreshed for this request or not, and carries
// out the policy's action on its answer. It changes none of the loop's
// state: the next value says what changes.
func (rn *run) try(lease *pool.Lease, retries int, refreshed bool) next {
	cred := lease.Credential
	au, err := rn.auth.Auth(rn.ctx, cred, false)
	if err != nil {
		lease.Release()
		if rn.ctx.Err() != nil {
			return ended(aborted(""))
		}
		return rn.authFailed(cred, err)
	}
	o, err := rn.outbound(cred, au) // the request as it goes (send.go)
	if err != nil {
		lease.Release()
		if _, notFor := err.(notForCred); notFor {
			// This request is not for the credential: nothing to show
			// on it.
			return next{do: rotate, cred: cred.ID, reason: err.Error(), exclude: true}
		}
		// A detour's wire that cannot carry it: shown on the credential,
		// as an auth that could not be prepared.
		return rn.authFailed(cred, err)
	}
	rn.attempts++
	rn.profile = rn.prov.Profile
	if au.Profile != nil {
		rn.profile = au.Profile
	}
	a := rn.attempt(cred, au, o)
	if a.verdict.Class == classify.Aborted || rn.ctx.Err() != nil {
		// The upstream may have counted the tokens it reported.
		a.close()
		lease.Release()
		rn.meter = a.meter
		out := aborted(cred.ID)
		out.credKind = cred.Kind
		return ended(out)
	}
	act := policy.Decide(rn.pol, rn.state(cred, a, retries, refreshed), a.verdict)
	reason := rn.p.o.Pool.Apply(cred.ID, rn.model, rn.tool, act, a.verdict) // the books, before acting
	nx := rn.carryOut(lease, act, a, reason)
	nx.cred = cred.ID
	if nx.reason == "" && act.Kind != policy.Pass && act.Kind != policy.Stop {
		nx.reason = reason
	}
	nx.retried = act.Kind == policy.Retry
	nx.refresh = act.Kind == policy.Refresh
	if act.CoolLater != nil {
		nx.later = &laterCool{cred: cred.ID, reason: reason, cool: *act.CoolLater}
	}
	return nx
}

// state is what the policy needs to know of the request at this answer.
func (rn *run) state(cred pool.Credential, a *answer, retries int, refreshed bool) policy.Attempt {
	s := policy.Attempt{
		Attempts:   rn.attempts,
		Model:      rn.model,
		Retries:    retries,
		CanRefresh: cred.Kind == api.KindOAuth,
		Refreshed:  refreshed,
		Provider:   rn.prov.Name,
		Stalled:    a.stalled,
	}
	if a.resp != nil && !a.inStream {
		s.Status = a.resp.StatusCode
	}
	if a.verdict.Class == classify.Capacity {
		now := rn.p.o.Clock.Now()
		if rn.capSince.IsZero() {
			// The budget starts at the first capacity answer, not at our
			// wait: upstream time and body reads count against it.
			rn.capSince = now
		}
		s.CapacityElapsed = now.Sub(rn.capSince)
		s.CapacityWaits = rn.capWaits
		s.Jitter = rn.p.o.Jitter()
	}
	return s
}

// carryOut does what act says with the answer a, whose reason is reason,
// and says what comes next: done when the client has an answer or left.
// It always releases the lease, so that waits hold no in-flight slot.
func (rn *run) carryOut(lease *pool.Lease, act policy.Action, a *answer, reason string) next {
	cred := lease.Credential
	switch act.Kind {
	case policy.Pass:
		return ended(rn.deliver(lease, a))
	case policy.Relay:
		lease.Release()
		return ended(rn.relay(cred.ID, a, act.Status))
	case policy.Retry:
		a.close()
		return rn.retryInPlace(lease, act, reason)
	}
	a.close()
	lease.Release()
	switch act.Kind {
	case policy.Fail:
		return ended(rn.failOutOf(cred, act))
	case policy.Stop:
		return ended(aborted(""))
	case policy.Rotate:
		return next{do: rotate, exclude: act.Exclude}
	case policy.WaitCapacity:
		return next{do: waitFor, delay: act.Delay}
	case policy.Refresh:
		return rn.refresh(cred)
	}
	// Exhausted and WaitPool come from WhenUnavailable, never here.
	return ended(rn.fail(cred.ID, http.StatusBadGateway, "subpool: unexpected action "+act.Kind.String(), 0, mayRetry))
}

// retryInPlace waits act's delay with the lease's slot kept (the pause is
// short and the retry goes to the same credential), then has the next
// attempt go to it again.
func (rn *run) retryInPlace(lease *pool.Lease, act policy.Action, reason string) next {
	cred := lease.Credential
	rn.emit(api.Event{Type: api.EventRetried, Provider: rn.prov.Name, CredentialID: cred.ID,
		Reason: reason, Attempts: rn.attempts, WaitMS: act.Delay.Milliseconds()})
	err := rn.sleep(act.Delay)
	lease.Release()
	if err != nil {
		return ended(aborted(""))
	}
	return next{do: again}
}

// refresh renews cred's token for this request and has the next attempt
// go to it again; a refresh that fails is carried out as authFailed says.
func (rn *run) refresh(cred pool.Credential) next {
	if _, err := rn.auth.Auth(rn.ctx, cred, true); err != nil {
		if rn.ctx.Err() != nil {
			return ended(aborted(""))
		}
		return rn.authFailed(cred, err)
	}
	return next{do: again}
}

// authFailed carries out the policy for a credential whose auth could not
// be prepared: the next attempt goes to another credential.
func (rn *run) authFailed(cred pool.Credential, err error) next {
	reason := err.Error()
	act := policy.AuthError(errors.Is(err, auth.ErrRelogin) || errors.Is(err, auth.ErrNoRefresh), reason)
	if act.Park != nil {
		rn.p.o.Pool.Park(cred.ID, act.Park.Model, act.Park.Kind, act.Park.Reason)
	}
	if act.Exclude {
		// Keychain locked, refresh endpoint down: worth showing on the
		// credential, and this request goes on without it.
		rn.p.o.Pool.SetReason(cred.ID, reason)
	}
	return next{do: rotate, cred: cred.ID, reason: reason, exclude: act.Exclude}
}

// emit sends an event about this request, naming the client key that made
// it, so that the tray and history can tell the tools apart.
func (rn *run) emit(e api.Event) {
	e.Client = clientName(rn.in)
	rn.p.o.Events.Emit(e)
}

// maxHeld bounds the stream preamble held back while we make sure a 200
// stream is not an error in disguise.
const maxHeld = 64 << 10

// heldBufs hold streams' preambles until they are sent (deliver): one
// grown by appends for each stream was, with the event reader's buffer,
// a seventh of what a stream allocates.
var heldBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2<<10); return &b }}

func isEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	// The two types upstreams send, spelled as they send them, are told
	// apart without a full media-type parse on every answer.
	if rest, ok := strings.CutPrefix(ct, "text/event-stream"); ok && (rest == "" || rest[0] == ';' || rest[0] == ' ') {
		return true
	}
	if strings.HasPrefix(ct, "application/json") {
		return false
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "text/event-stream"
}

// preamble events carry no content: an error may still follow them before
// the first delta, so they are held back with it.
var preamble = map[string]bool{
	"message_start": true, "ping": true, "content_block_start": true,
	"response.created": true, "response.in_progress": true,
	"response.output_item.added": true, "response.content_part.added": true,
	// Codex's backend reports the plan's windows in-stream before content.
	"codex.rate_limits": true, "codex.response.metadata": true,
}

// answer is one attempt's answer as far as it was read to judge it.
type answer struct {
	resp    *http.Response
	verdict classify.Verdict
	// head is what was read of the body: an error body's first
	// maxErrorBody bytes, or a stream's held-back preamble (the raw
	// bytes, error event included).
	head []byte
	// events reads the rest of a 200 stream after head; nil when the
	// stream goes on as plain bytes (one of its events was too large to
	// read as an event).
	events *sse.Reader
	stream bool
	// held is head's buffer when head is a preamble, from heldBufs.
	held *[]byte
	// inStream: the verdict comes from an error event inside a 200
	// stream; errData is that event's data.
	inStream bool
	errData  []byte
	// meter has the usage of the events read so far; it becomes the
	// request's only if this answer is delivered.
	meter metering.Meter
	// wd holds the answer's deadlines (deadline.go); nil when both are
	// off. stalled: one of them cut the answer off before anything of it
	// reached the client.
	wd      *watchdog
	stalled bool
}

func (a *answer) close() {
	if a.resp != nil {
		a.resp.Body.Close()
	}
}

// attempt sends one attempt and reads as much of its answer as it takes
// to judge it: the status and headers, a refusal's body, or a 200 stream's
// events up to the first with content. Of a stream whose first event is
// no refusal, it sends the client the headers on the way (peek, commit).
func (rn *run) attempt(cred pool.Credential, au auth.Auth, o outReq) *answer {
	p := rn.p
	ctx, cancel := rn.ctx, context.CancelCauseFunc(nil)
	first, idle := rn.deadlines()
	if first > 0 || idle > 0 {
		ctx, cancel = context.WithCancelCause(rn.ctx)
	}
	resp, err := rn.send(ctx, au, o)
	now := p.o.Clock.Now()
	a := &answer{resp: resp}
	switch {
	case cancel != nil && err != nil:
		cancel(nil)
	case cancel != nil:
		a.watch(p.o.Clock, cancel, first, idle)
	}
	if err != nil {
		if rn.ctx.Err() != nil {
			// The classifier reads this as aborted, never as the
			// upstream's fault.
			err = context.Canceled
		}
		a.verdict = classify.Classify(rn.profile, classify.Response{Err: err}, now)
		return a
	}
	if q, ok := classify.ReadWindows(resp.Header, now); ok {
		p.o.Pool.SetQuota(cred.ID, q)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if !ok {
		a.head, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		a.verdict = classify.Classify(rn.profile, classify.Response{Status: resp.StatusCode, Header: resp.Header, Body: a.head}, now)
	} else {
		a.verdict = classify.Verdict{Class: classify.OK, Status: resp.StatusCode}
	}
	// The budget is the model's the lease was taken for: upstreams count
	// request limits per model. A rate-limit refusal's budget is left to
	// its cooldown, which the classifier already times by the spent
	// count's reset; a second, budget-shaped cooldown would only repeat
	// it. It is set before the answer is acted on, with the lease still
	// held: a 2xx lets the waiting requests in, and they must meet it.
	if a.verdict.Class != classify.RateLimit {
		if n, reset, ok := classify.ParseBudget(resp.Header, now); ok {
			p.o.Pool.SetBudget(cred.ID, rn.model, n, reset)
		}
	}
	if ok && isEventStream(resp.Header) {
		rn.peek(a, cred.ID)
	}
	return a
}

// watch puts the deadlines on a's body: the first event's on a 2xx event
// stream, the idle one on every body. Closing the body ends them.
func (a *answer) watch(clk clock.Clock, cancel context.CancelCauseFunc, first, idle time.Duration) {
	resp := a.resp
	if resp.StatusCode < 200 || resp.StatusCode >= 300 || !isEventStream(resp.Header) {
		first = 0
	}
	if a.wd = watch(clk, resp.Body, cancel, first, idle); a.wd != nil {
		resp.Body = a.wd
	}
}

// peek reads a 200 stream's events until the first one with content, or
// an error event: errors can arrive inside a 200 stream before any
// content, and such a stream is acted on like the HTTP error it stands
// for.
//
// Once the stream's first event has shown it is no error in disguise
// (the usual refusal comes first, in place of message_start), its headers
// go to the client while the events stay held: the client is then ready
// to read when content comes, and a later refusal before content can
// still be retried, since no byte of the body has gone out (commit).
func (rn *run) peek(a *answer, credID string) {
	r := sse.NewReader(a.resp.Body, 0, true)
	a.events, a.stream = r, true
	a.held = heldBufs.Get().(*[]byte)
	held := (*a.held)[:0]
	for len(held) < maxHeld {
		ev, err := r.Next()
		held = append(held, ev.Raw...)
		if err != nil {
			switch {
			case a.wd.stalled() != notStalled:
				a.verdict = classify.Verdict{Class: classify.Transient, Reason: a.wd.reason()}
				a.stalled = true
				return
			case errors.Is(err, io.EOF) && len(held) > 0:
				// A short stream that ended cleanly: deliver as is.
				a.head = held
				return
			case errors.Is(err, sse.ErrTooLarge):
				// Not ours to judge: pass it on as it comes.
				a.head = append(held, r.Buffered()...)
				a.events = nil
				return
			case rn.ctx.Err() != nil:
				a.verdict = classify.Verdict{Class: classify.Aborted, Reason: "the client went away"}
				return
			case errors.Is(err, io.EOF):
				err = io.ErrUnexpectedEOF
			}
			a.verdict = classify.Classify(rn.profile, classify.Response{Err: err}, rn.p.o.Clock.Now())
			return
		}
		if ev.Name == "" && len(ev.Data) == 0 {
			continue // a comment or keep-alive
		}
		a.meter.Event(ev.Name, ev.Data)
		rn.readRateLimits(credID, ev)
		if v, isErr := classify.ClassifyEvent(rn.profile, ev.Name, ev.Data, rn.p.o.Clock.Now()); isErr {
			a.verdict, a.inStream = v, true
			a.errData = bytes.Clone(ev.Data)
			a.head = held
			return
		}
		if !preamble[ev.Name] && !(ev.Name == "" && emptyChatChunk(ev.Data)) {
			a.wd.gotContent()
			break
		}
		if !rn.committed {
			rn.commit(a.resp, credID)
		}
	}
	a.head = held
}

// emptyChatChunk reports a Chat Completions chunk that carries no content
// yet: the opening one names the role with an empty content, and an error
// may still follow it. It only runs on a stream's first events.
func emptyChatChunk(data []byte) bool {
	var c struct {
		Choices []struct {
			Delta map[string]json.RawMessage `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &c) != nil || len(c.Choices) == 0 {
		return false
	}
	for _, ch := range c.Choices {
		for k, v := range ch.Delta {
			switch string(v) {
			case `""`, "null", "[]":
				continue
			}
			if k != "role" {
				return false
			}
		}
	}
	return true
}

// readRateLimits gives the pool the windows a Codex stream reports in its
// codex.rate_limits event, as the x-codex-* headers are read. Only a named
// event is read: Codex's backend names it, and an unnamed event is a Chat
// Completions chunk, not worth a look each.
func (rn *run) readRateLimits(credID string, ev sse.Event) {
	if ev.Name != "codex.rate_limits" {
		return
	}
	if q, ok := classify.ReadRateLimitEvent(ev.Name, ev.Data, rn.p.o.Clock.Now()); ok {
		rn.p.o.Pool.SetQuota(credID, q)
	}
}
