package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/metering"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/pool"
)

// maxErrorBody bounds how much of a refusal is read to classify it; the
// rest is passed on to the client unread.
const maxErrorBody = 64 << 10

// request is one client request and what it has cost so far. The bounds
// (attempts, waits, the capacity budget) are per client request, whichever
// provider serves it, so a fallback run shares them.
type request struct {
	p     *Proxy
	pol   policy.Config // as the proxy was tuned when the request came in
	w     http.ResponseWriter
	r     *http.Request
	ctx   context.Context
	start time.Time
	info  requestInfo
	// tool is the tool the request comes from (api.ToolClaudeCode…), by
	// its User-Agent: a subscription login serves only its own tool.
	tool string

	attempts int
	waited   policy.Waited
	capSince time.Time // the first capacity answer
	capWaits int

	// What the client finally got, for request_finished.
	status      int
	class       classify.Class
	cred        string
	fallbackTo  string
	credKind    string
	servedModel string
	firstByte   time.Time // the first byte of the answer written to the client
	waitedTotal time.Duration
	meter       metering.Meter // the usage the upstream reported in the answer delivered
	// abort: a JSON answer failed after its headers went out; the
	// connection is cut once request_finished is out.
	abort bool
	// committed: the client has a stream's status and headers, and
	// nothing of its body yet (run.commit).
	committed bool
}

// run is the attempt loop on one provider: the client's, or a fallback
// target. It carries out the policy's actions and decides nothing itself.
type run struct {
	*request
	w       http.ResponseWriter // the client, or a translating writer
	r       *http.Request
	prov    *Provider
	upath   string
	body    []byte
	model   string
	auth    auth.Authenticator
	profile *classify.Profile // the current attempt's rules

	pinned     string // credential to try again (retry, capacity, refresh)
	lastCred   string
	lastReason string
	exclude    map[string]bool
	refreshed  map[string]bool
	retries    map[string]int
	// noWait: another target of the request may serve, so this run gives
	// up at once when its pool has nothing ready instead of waiting for it.
	noWait bool
}

// loop runs attempts until the client has an answer or has left (nil),
// or until no credential of the provider can serve the request in time:
// then it returns the Exhausted action, having written nothing, so that
// serving may detour to another provider.
func (rn *run) loop() *policy.Action {
	for {
		if rn.ctx.Err() != nil {
			rn.class = classify.Aborted
			return nil
		}
		lease, ex := rn.lease()
		if lease == nil {
			if ex != nil && rn.committed {
				// The client already has this stream's headers: the
				// refusal goes in the stream, and no other provider
				// takes over an answer begun here.
				rn.fail(ex.Status, ex.Message, ex.RetryAfter, retryHint(ex.Final))
				return nil
			}
			return ex
		}
		cred := lease.Credential
		if rn.lastCred != "" && cred.ID != rn.lastCred {
			rn.emit(api.Event{Type: api.EventRotated, Provider: rn.prov.Name, CredentialID: cred.ID,
				From: rn.lastCred, To: cred.ID, Reason: rn.lastReason, Model: rn.model})
		}
		rn.lastCred = cred.ID

		au, err := rn.auth.Auth(rn.ctx, cred, false)
		if err != nil {
			lease.Release()
			if rn.ctx.Err() != nil {
				rn.class = classify.Aborted
				return nil
			}
			rn.authFailed(cred, err)
			continue
		}
		rn.attempts++
		rn.profile = rn.prov.Profile
		if au.Profile != nil {
			rn.profile = au.Profile
		}
		a := rn.answer(cred, au)
		if a.verdict.Class == classify.Aborted || rn.ctx.Err() != nil {
			// The upstream may have counted the tokens it reported.
			a.close()
			lease.Release()
			rn.class, rn.cred, rn.credKind, rn.meter = classify.Aborted, cred.ID, cred.Kind, a.meter
			return nil
		}
		act := policy.Decide(rn.pol, rn.state(cred, a), a.verdict)
		rn.record(cred, act, a.verdict)
		if rn.carryOut(lease, act, a) {
			return nil
		}
	}
}

// state is what the policy needs to know of the request at this answer.
func (rn *run) state(cred pool.Credential, a *answer) policy.Attempt {
	s := policy.Attempt{
		Attempts:   rn.attempts,
		Model:      rn.model,
		Retries:    rn.retries[cred.ID],
		CanRefresh: cred.Kind == api.KindOAuth,
		Refreshed:  rn.refreshed[cred.ID],
		Provider:   rn.prov.Name,
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

// record tells the pool what the action says it must know, before the
// action is carried out.
func (rn *run) record(cred pool.Credential, act policy.Action, v classify.Verdict) {
	pl := rn.p.o.Pool
	reason := v.Reason
	if reason == "" {
		reason = string(v.Class)
	}
	if act.Kind != policy.Pass && act.Kind != policy.Stop {
		rn.lastReason = reason
	}
	if act.Cool != nil {
		scope := pool.Scope(act.Cool.Scope)
		pl.CoolDown(cred.ID, rn.model, scope, act.Cool.RetryAfter, reason)
	}
	if act.Park != nil {
		pl.Park(cred.ID, act.Park.Model, act.Park.Kind, act.Park.Reason)
	}
	if act.BarTool {
		pl.BarTool(cred.ID, rn.tool, reason)
	}
	if v.Class == classify.Transient && act.Kind != policy.Pass {
		// The credential's own upstream is failing: worth showing. Client
		// errors, overloads and a client that left are not the
		// credential's doing and leave its reason alone.
		pl.SetReason(cred.ID, reason)
	}
	if act.Kind == policy.Pass {
		return // counted when the answer has been delivered
	}
	switch act.Count {
	case policy.CountSuccess:
		pl.Record(cred.ID, true, false)
	case policy.CountFailure:
		pl.Record(cred.ID, false, false)
	case policy.CountRateLimit:
		pl.Record(cred.ID, false, true)
	}
}

// carryOut does what act says with the answer a. It reports whether the
// request is over for this run (the client has an answer or left). It
// always releases the lease, so that waits hold no in-flight slot.
func (rn *run) carryOut(lease *pool.Lease, act policy.Action, a *answer) bool {
	cred := lease.Credential
	switch act.Kind {
	case policy.Pass:
		rn.deliver(lease, a)
		return true

	case policy.Relay:
		lease.Release()
		rn.relay(cred.ID, a, act.Status)
		return true

	case policy.Fail:
		a.close()
		lease.Release()
		rn.cred = cred.ID
		rn.fail(act.Status, act.Message, 0, retryHint(act.Final))
		return true

	case policy.Stop:
		a.close()
		lease.Release()
		rn.class = classify.Aborted
		return true

	case policy.Rotate:
		a.close()
		lease.Release()
		rn.pinned = ""
		return false

	case policy.Retry:
		a.close()
		if rn.retries == nil {
			rn.retries = map[string]int{}
		}
		rn.retries[cred.ID]++
		rn.emit(api.Event{Type: api.EventRetried, Provider: rn.prov.Name, CredentialID: cred.ID,
			Reason: rn.lastReason, Attempts: rn.attempts, WaitMS: act.Delay.Milliseconds()})
		// The slot is kept: the pause is short and the retry goes to the
		// same credential.
		err := rn.sleep(act.Delay)
		lease.Release()
		if err != nil {
			rn.class = classify.Aborted
			return true
		}
		rn.pinned = cred.ID
		return false

	case policy.WaitCapacity:
		a.close()
		lease.Release()
		rn.capWaits++
		if rn.wait(api.WaitCapacity, cred.ID, act.Delay, rn.lastReason, nil) != nil {
			return true
		}
		rn.pinned = cred.ID
		return false

	case policy.Refresh:
		a.close()
		lease.Release()
		if rn.refreshed == nil {
			rn.refreshed = map[string]bool{}
		}
		rn.refreshed[cred.ID] = true
		if _, err := rn.auth.Auth(rn.ctx, cred, true); err != nil {
			if rn.ctx.Err() != nil {
				rn.class = classify.Aborted
				return true
			}
			rn.authFailed(cred, err)
			return false
		}
		rn.pinned = cred.ID
		return false
	}
	// Exhausted and WaitPool come from WhenUnavailable, never here.
	a.close()
	lease.Release()
	rn.fail(http.StatusBadGateway, "subpool: unexpected action "+act.Kind.String(), 0, mayRetry)
	return true
}

// authFailed carries out the policy for a credential whose auth could not
// be prepared.
func (rn *run) authFailed(cred pool.Credential, err error) {
	reason := err.Error()
	rn.lastReason = reason
	act := policy.AuthError(errors.Is(err, auth.ErrRelogin) || errors.Is(err, auth.ErrNoRefresh), reason)
	if act.Park != nil {
		rn.p.o.Pool.Park(cred.ID, act.Park.Model, act.Park.Kind, act.Park.Reason)
	}
	if act.Exclude {
		// Keychain locked, refresh endpoint down: worth showing on the
		// credential, and this request goes on without it.
		rn.p.o.Pool.SetReason(cred.ID, reason)
		if rn.exclude == nil {
			rn.exclude = map[string]bool{}
		}
		rn.exclude[cred.ID] = true
	}
	rn.pinned = ""
}

// lease picks the credential for the next attempt. When none can take the
// request, the policy says whether to wait for the pool; a wait ends when
// the pool says something changed (a release, a cooldown's end, a
// credential added or resumed), not on a poll. One wait_started /
// wait_ended pair covers the whole wait, however many wake-ups it takes.
func (rn *run) lease() (*pool.Lease, *policy.Action) {
	p := rn.p
	pl := p.o.Pool
	waiting := false
	end := func(outcome string) {
		if waiting {
			waiting = false
			rn.emit(api.Event{Type: api.EventWaitEnded, Provider: rn.prov.Name,
				Kind: api.WaitSoleProvider, Outcome: outcome, Model: rn.model})
		}
	}
	// The pool's change signal is taken only once a look has found
	// nothing, and before the look that precedes a wait, so a change
	// between that look and the wait is not missed; a request that finds a
	// credential at once never makes the pool build one.
	var changed <-chan struct{}
	for {
		if rn.pinned != "" {
			l, err := pl.Acquire(rn.pinned, rn.model)
			if err == nil {
				end("ready")
				return l, nil
			}
			rn.pinned = ""
		}
		l, err := pl.Pick(pool.PickRequest{Provider: rn.prov.Name, Model: rn.model, Affinity: rn.info.Affinity, Exclude: rn.exclude, Tool: rn.tool})
		if err == nil {
			end("ready")
			return l, nil
		}
		var u *pool.Unavailable
		if !errors.As(err, &u) {
			end("failed")
			return nil, &policy.Action{Kind: policy.Exhausted, Status: http.StatusServiceUnavailable, Message: err.Error(), Final: true}
		}
		if changed == nil {
			changed = pl.Changed()
			continue
		}
		pol := rn.pol
		if rn.noWait {
			pol.SoleProviderMax = 0
		}
		act := policy.WhenUnavailable(pol, rn.waited, rn.view(u))
		if act.Kind != policy.WaitPool {
			end("gave_up")
			return nil, &act
		}
		now := p.o.Clock.Now()
		if !waiting {
			waiting = true
			until := now.Add(act.Delay)
			rn.emit(api.Event{Type: api.EventWaitStarted, Provider: rn.prov.Name,
				Kind: api.WaitSoleProvider, WaitMS: act.Delay.Milliseconds(), Until: &until, Reason: u.Error(), Model: rn.model})
		}
		err = rn.sleepUntil(act.Delay, changed)
		changed = nil
		after := p.o.Clock.Now()
		rn.waited.Total += after.Sub(now)
		rn.waited.Count++
		if err != nil {
			rn.class = classify.Aborted
			end("aborted")
			return nil, nil
		}
	}
}

// view is the pool's answer as the policy reads it.
func (rn *run) view(u *pool.Unavailable) policy.Unavailable {
	why := u.Error()
	if u.Total == 0 {
		why = fmt.Sprintf("no %s credentials: add one with `subpool add-key %s --label NAME` or `subpool login %s`", rn.prov.Name, rn.prov.Name, rn.prov.Name)
	} else if len(rn.exclude) > 0 && rn.lastReason != "" {
		why += "; last error: " + rn.lastReason
	}
	return policy.Unavailable{Total: u.Total, Busy: u.Busy, NextReady: u.NextReady, HasNext: u.HasNext, Why: why}
}

// wait sleeps d with wait_started/wait_ended around it. It returns an
// error (and marks the request aborted) if the client left.
func (rn *run) wait(kind, credID string, d time.Duration, reason string, wake <-chan struct{}) error {
	p := rn.p
	until := p.o.Clock.Now().Add(d)
	rn.emit(api.Event{Type: api.EventWaitStarted, Provider: rn.prov.Name, CredentialID: credID,
		Kind: kind, WaitMS: d.Milliseconds(), Until: &until, Reason: reason, Model: rn.model})
	err := rn.sleepUntil(d, wake)
	outcome := "ready"
	if err != nil {
		outcome = "aborted"
		rn.class = classify.Aborted
	}
	rn.emit(api.Event{Type: api.EventWaitEnded, Provider: rn.prov.Name, CredentialID: credID,
		Kind: kind, Outcome: outcome, Model: rn.model})
	return err
}

func (rn *run) sleep(d time.Duration) error { return rn.sleepUntil(d, nil) }

// sleepUntil waits d on the clock, or until wake is closed, or until the
// client leaves (an error).
func (rn *run) sleepUntil(d time.Duration, wake <-chan struct{}) error {
	start := rn.p.o.Clock.Now()
	defer func() { rn.waitedTotal += rn.p.o.Clock.Now().Sub(start) }()
	t := rn.p.o.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-rn.ctx.Done():
		return rn.ctx.Err()
	case <-t.C():
	case <-wake:
	}
	return nil
}

// fail answers with subpool's own provider-shaped error.
func (rn *run) fail(status int, msg string, retryAfter time.Duration, hint retryHint) {
	rn.status = status
	if rn.class == "" {
		rn.class = classRefused
	}
	if rn.committed {
		rn.w.Write(statusEvent(rn.prov.Wire, status, "", ownWords(msg)))
		http.NewResponseController(rn.w).Flush()
		return
	}
	rn.setHeaders(rn.w.Header(), rn.cred)
	writeError(rn.w, rn.prov.Wire, status, msg, retryAfter, hint)
}

// setHeaders names the credential and the attempts on the answer. Keys
// are set as net/http spells them, without canonicalizing: every answer
// pays for this.
func (rn *run) setHeaders(h http.Header, credID string) {
	if credID != "" {
		h["X-Subpool-Credential"] = []string{credID}
	}
	if rn.attempts < len(attemptValues) {
		h["X-Subpool-Attempts"] = attemptValues[rn.attempts]
	} else {
		h["X-Subpool-Attempts"] = []string{strconv.Itoa(rn.attempts)}
	}
}

// attemptValues are the usual x-subpool-attempts values, shared; each
// slice's capacity is its length, so an append copies.
var attemptValues = func() [][]string {
	v := make([][]string, 10)
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

// send makes one upstream request with cred's auth.
func (rn *run) send(au auth.Auth) (*http.Response, error) {
	base := rn.prov.BaseURL
	if au.BaseURL != "" {
		base = au.BaseURL
	}
	path := rn.upath
	if au.StripV1 {
		path = strings.TrimPrefix(path, "/v1")
	}
	u := strings.TrimRight(base, "/") + path
	if rn.r.URL.RawQuery != "" {
		u += "?" + rn.r.URL.RawQuery
	}
	var body io.Reader = http.NoBody
	if rn.body != nil {
		body = bytes.NewReader(rn.body)
	}
	out, err := http.NewRequestWithContext(rn.ctx, rn.r.Method, u, body)
	if err != nil {
		return nil, err
	}
	out.Header = outboundHeader(rn.r.Header, au.Header)
	if rn.body != nil {
		out.ContentLength = int64(len(rn.body))
		b := rn.body
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	return rn.p.o.Transport.RoundTrip(out)
}

// dropOutbound are headers never forwarded upstream: hop-by-hop ones, and
// anything that identifies the client to subpool rather than to the
// upstream. Keys are canonical, as net/http delivers them.
var dropOutbound = map[string]bool{
	"Authorization": true, "X-Api-Key": true, "Cookie": true, "Host": true, "Content-Length": true,
	"Accept-Encoding": true, // the transport negotiates gzip and decodes it, so errors stay readable
	"Connection":      true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Forwarded": true, "X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true, "X-Real-Ip": true,
}

// outboundHeader builds the upstream request's headers in one pass over
// the client's (every request pays for it). Value slices are shared with
// the inbound request, which nothing modifies.
func outboundHeader(in, au http.Header) http.Header {
	h := make(http.Header, len(in)+len(au))
	for k, vs := range in {
		if dropOutbound[k] || strings.HasPrefix(k, "X-Subpool-") {
			continue
		}
		h[k] = vs
	}
	for k, vs := range au {
		ck := http.CanonicalHeaderKey(k)
		if ck == "Anthropic-Beta" {
			h[ck] = []string{mergeBetas(in.Values("Anthropic-Beta"), vs)}
			continue
		}
		h[ck] = vs
	}
	return h
}

// mergeBetas joins the client's betas with the ones a credential needs,
// once each, in order: Claude Code sends its own list and OAuth needs
// oauth-2025-04-20 on top.
func mergeBetas(client, need []string) string {
	seen := map[string]bool{}
	var out []string
	for _, list := range [][]string{client, need} {
		for _, v := range list {
			for _, b := range strings.Split(v, ",") {
				b = strings.TrimSpace(b)
				if b != "" && !seen[b] {
					seen[b] = true
					out = append(out, b)
				}
			}
		}
	}
	return strings.Join(out, ",")
}

// emit sends an event about this request, naming the client key that made
// it, so that the tray and history can tell the tools apart.
func (rn *run) emit(e api.Event) {
	e.Client = clientName(rn.request.r)
	rn.p.o.Events.Emit(e)
}
