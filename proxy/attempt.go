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
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/pool"
)

// maxErrorBody bounds how much of a refusal we read to classify it; error
// bodies are small, and a huge one is not worth buffering.
const maxErrorBody = 64 << 10

// maxPoolWaits bounds the times one request waits for the pool; each wait
// is itself bounded by sole_provider_max.
const maxPoolWaits = 1000

// run is one client request's journey through attempts and waits.
type run struct {
	p    *Proxy
	w    http.ResponseWriter
	r    *http.Request
	ctx  context.Context
	prov *Provider
	// profile classifies the current attempt's answers: the provider's,
	// or the credential's own (Auth.Profile).
	profile *classify.Profile
	upath   string
	body    []byte
	info    requestInfo
	start   time.Time

	attempts   int
	lastCred   string // credential of the previous attempt
	lastReason string // why the previous attempt did not serve
	pinned     string // credential to retry on (transient, capacity, refresh)
	exclude    map[string]bool
	refreshed  map[string]bool
	transient  map[string]int

	capDeadline time.Time // set at the first capacity answer
	capWaits    int
	soleWaited  time.Duration
	waits       int // pool waits, bounded so a pool that never frees up cannot hold a request forever

	// What the client finally got, for request_finished.
	status int
	class  classify.Class
	cred   string
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, prov *Provider, upath string) {
	rn := &run{p: p, w: w, r: r, ctx: r.Context(), prov: prov, upath: upath, start: p.o.Clock.Now()}
	body, err := readBody(w, r, p.o.MaxBody)
	switch {
	case errors.Is(err, errTooLarge):
		rn.refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than max_body (%d bytes); raise max_body in config.toml if this is intended", p.o.MaxBody), 0)
	case err != nil:
		// The client stopped sending: nothing to answer, nothing to cool.
		rn.class = classify.Aborted
	default:
		rn.body = body
		rn.info = inspect(r.Header, body)
		rn.loop()
	}
	p.o.Events.Emit(api.Event{
		Type: api.EventRequestFinished, Provider: prov.Name, CredentialID: rn.cred,
		Model: rn.info.Model, Path: upath, Status: rn.status, Class: string(rn.class),
		Attempts: rn.attempts, LatencyMS: p.o.Clock.Now().Sub(rn.start).Milliseconds(),
	})
}

// loop runs attempts until one answer reaches the client, the client
// leaves, or there is nothing sensible left to try.
func (rn *run) loop() {
	p := rn.p
	for {
		if rn.ctx.Err() != nil {
			rn.class = classify.Aborted
			return
		}
		if rn.attempts >= p.o.MaxAttempts {
			rn.refuse(http.StatusBadGateway, fmt.Sprintf("gave up after %d upstream attempts; last: %s", rn.attempts, rn.lastReason), 0)
			return
		}
		lease, ok := rn.lease()
		if !ok {
			return
		}
		cred := lease.Credential
		if rn.lastCred != "" && cred.ID != rn.lastCred {
			p.o.Events.Emit(api.Event{Type: api.EventRotated, Provider: rn.prov.Name, CredentialID: cred.ID,
				From: rn.lastCred, To: cred.ID, Reason: rn.lastReason, Model: rn.info.Model})
		}
		rn.lastCred = cred.ID

		auth, err := p.o.Auth.Auth(rn.ctx, cred, false)
		if err != nil {
			lease.Release()
			if rn.ctx.Err() != nil {
				rn.class = classify.Aborted
				return
			}
			rn.authFailed(cred, err)
			continue
		}

		rn.attempts++
		rn.profile = rn.prov.Profile
		if auth.Profile != nil {
			rn.profile = auth.Profile
		}
		resp, err := rn.send(cred, auth)
		now := p.o.Clock.Now()
		if resp != nil {
			if u, ok := classify.ParseUtilization(resp.Header, now); ok {
				p.o.Pool.SetUtilization(cred.ID, u)
			}
		}
		var v classify.Verdict
		var errBody []byte
		switch {
		case err != nil:
			if rn.ctx.Err() != nil {
				err = context.Canceled
			}
			v = classify.Classify(rn.profile, classify.Response{Err: err}, now)
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			v = classify.Verdict{Class: classify.OK}
		default:
			errBody, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
			v = classify.Classify(rn.profile, classify.Response{Status: resp.StatusCode, Header: resp.Header, Body: errBody}, now)
		}
		// Before act and deliver, with the lease still held: a 2xx lets
		// the waiting requests in (Confirm), and they must meet the new
		// budget. The budget is the model's the lease was taken for:
		// upstreams count request limits per model. A rate-limit
		// refusal's budget is left to its cooldown, which the classifier
		// already times by the spent count's reset; a second,
		// budget-shaped cooldown would only repeat it.
		if resp != nil && v.Class != classify.RateLimit {
			if n, reset, ok := classify.ParseBudget(resp.Header, now); ok {
				p.o.Pool.SetBudget(cred.ID, rn.info.Model, n, reset)
			}
		}

		if v.Class == classify.OK && isEventStream(resp.Header) {
			// Errors can arrive inside a 200 stream before any content;
			// hold the preamble back so such a stream is retried like
			// the HTTP error it stands for.
			held, src, sv := rn.peekStream(resp)
			if sv.Class != classify.OK {
				resp.Body.Close()
				v = sv
				if v.Class == classify.Aborted || rn.ctx.Err() != nil {
					lease.Release()
					rn.class = classify.Aborted
					return
				}
			} else {
				rn.deliver(lease, resp, held, src)
				return
			}
		}

		if rn.act(lease, v, resp, errBody) {
			return
		}
	}
}

// act carries out a verdict. It returns true when the request is finished
// (answered or abandoned); false to go round again. It always releases
// the lease, so waits do not hold an in-flight slot.
func (rn *run) act(lease *pool.Lease, v classify.Verdict, resp *http.Response, errBody []byte) bool {
	p := rn.p
	pl := p.o.Pool
	cred := lease.Credential
	reason := v.Reason
	if reason == "" {
		reason = string(v.Class)
	}
	rn.lastReason = reason
	if v.Class != classify.OK {
		pl.SetReason(cred.ID, reason)
	}

	switch v.Class {
	case classify.OK:
		rn.deliver(lease, resp, nil, resp.Body)
		return true

	case classify.ClientError:
		lease.Release()
		pl.Record(cred.ID, true, false)
		rn.passThrough(cred.ID, resp, errBody, v.Class)
		return true

	case classify.Aborted:
		lease.Release()
		rn.class = classify.Aborted
		return true

	case classify.RateLimit:
		lease.Release()
		pl.Record(cred.ID, false, true)
		scope := pool.ScopeCredential
		switch v.Scope {
		case classify.ScopeModel:
			if rn.info.Model != "" {
				scope = pool.ScopeModel
			}
		case classify.ScopeProvider:
			scope = pool.ScopeProvider
		}
		pl.CoolDown(cred.ID, rn.info.Model, scope, v.RetryAfter, reason)
		rn.pinned = ""
		return false

	case classify.Transient:
		n := rn.transient[cred.ID]
		if n >= len(p.o.TransientBackoff) {
			lease.Release()
			pl.Record(cred.ID, false, false)
			status := http.StatusBadGateway
			if resp != nil && resp.StatusCode >= 500 {
				status = resp.StatusCode
			}
			rn.cred = cred.ID
			rn.refuse(status, fmt.Sprintf("%s upstream failed %d times in a row (%s); try again shortly", rn.prov.Name, n+1, reason), 0)
			return true
		}
		if rn.transient == nil {
			rn.transient = map[string]int{}
		}
		rn.transient[cred.ID] = n + 1
		p.o.Events.Emit(api.Event{Type: api.EventRetried, Provider: rn.prov.Name, CredentialID: cred.ID,
			Reason: reason, Attempts: rn.attempts, WaitMS: p.o.TransientBackoff[n].Milliseconds()})
		// Keep the slot: the pause is short and the retry goes to the
		// same credential.
		err := rn.sleep(p.o.TransientBackoff[n])
		lease.Release()
		if err != nil {
			rn.class = classify.Aborted
			return true
		}
		rn.pinned = cred.ID
		return false

	case classify.Capacity:
		lease.Release()
		if p.o.CapacityMax <= 0 {
			rn.passThrough(cred.ID, resp, errBody, v.Class)
			return true
		}
		now := p.o.Clock.Now()
		if rn.capDeadline.IsZero() {
			// The budget starts at the first capacity answer, not at our
			// wait: upstream time and body reads count against it.
			rn.capDeadline = now.Add(p.o.CapacityMax)
		}
		remaining := rn.capDeadline.Sub(now)
		if remaining <= 0 {
			rn.passThrough(cred.ID, resp, errBody, v.Class)
			return true
		}
		d := v.RetryAfter
		if d <= 0 {
			d = capacityBackoff(rn.capWaits, p.o.Jitter())
		}
		d = min(d, remaining)
		rn.capWaits++
		if rn.wait(api.WaitCapacity, cred.ID, d, reason) != nil {
			return true
		}
		rn.pinned = cred.ID
		return false

	case classify.AuthInvalid, classify.AuthExpired:
		lease.Release()
		if v.Class == classify.AuthInvalid && (cred.Kind != api.KindOAuth || rn.refreshed[cred.ID]) {
			pl.Record(cred.ID, false, false)
			pl.Park(cred.ID, "", api.ParkRelogin, reason)
			rn.pinned = ""
			return false
		}
		// A login's 401 often means an expired access token even when
		// the upstream does not say so: one refresh tells the two apart.
		if rn.refreshed[cred.ID] {
			pl.Park(cred.ID, "", api.ParkRelogin, "still rejected after a token refresh: "+reason)
			rn.pinned = ""
			return false
		}
		if rn.refreshed == nil {
			rn.refreshed = map[string]bool{}
		}
		rn.refreshed[cred.ID] = true
		if _, err := p.o.Auth.Auth(rn.ctx, cred, true); err != nil {
			if rn.ctx.Err() != nil {
				rn.class = classify.Aborted
				return true
			}
			rn.authFailed(cred, err)
			return false
		}
		rn.pinned = cred.ID
		return false

	case classify.Payment:
		lease.Release()
		pl.Record(cred.ID, false, false)
		model := ""
		if v.Scope == classify.ScopeModel {
			model = rn.info.Model
		}
		pl.Park(cred.ID, model, api.ParkPayment, reason)
		rn.pinned = ""
		return false
	}
	// An unknown class is a classifier bug; pass the answer on rather
	// than guess.
	lease.Release()
	rn.passThrough(cred.ID, resp, errBody, v.Class)
	return true
}

// authFailed handles a credential whose auth could not be prepared.
func (rn *run) authFailed(cred pool.Credential, err error) {
	reason := err.Error()
	rn.lastReason = reason
	if errors.Is(err, ErrRelogin) || errors.Is(err, ErrNoRefresh) {
		rn.p.o.Pool.Park(cred.ID, "", api.ParkRelogin, reason)
	} else {
		// Keychain locked, refresh endpoint down: this request goes on
		// without the credential; the next one tries it again.
		rn.p.o.Pool.SetReason(cred.ID, reason)
		if rn.exclude == nil {
			rn.exclude = map[string]bool{}
		}
		rn.exclude[cred.ID] = true
	}
	rn.pinned = ""
}

// lease picks the credential for the next attempt, waiting out a short
// pool-wide cooldown when that is all that stands in the way.
func (rn *run) lease() (*pool.Lease, bool) {
	p := rn.p
	for {
		if rn.pinned != "" {
			l, err := p.o.Pool.Acquire(rn.pinned, rn.info.Model)
			if err == nil {
				return l, true
			}
			rn.pinned = ""
		}
		l, err := p.o.Pool.Pick(pool.PickRequest{Provider: rn.prov.Name, Model: rn.info.Model, Affinity: rn.info.Affinity, Exclude: rn.exclude})
		if err == nil {
			return l, true
		}
		var u *pool.Unavailable
		if !errors.As(err, &u) {
			rn.refuse(http.StatusServiceUnavailable, err.Error(), 0)
			return nil, false
		}
		left := p.o.SoleProviderMax - rn.soleWaited
		var d time.Duration
		switch {
		case u.HasNext && u.NextReady <= left:
			d = u.NextReady
		case u.Busy > 0 && left > 0:
			// Every usable credential is at its in-flight limit: a slot
			// frees up when a request ends.
			d = min(100*time.Millisecond, left)
		}
		shortWait := d > 0 || (u.HasNext && u.NextReady == 0)
		// Another provider serves the turn only when this one will not be
		// ready within sole_provider_max: a conversation should not change
		// model (and lose its prompt cache) over a cooldown of seconds.
		// docs/fallback.md says why this differs from the wording.
		var fb string
		if !shortWait {
			var served bool
			if fb, served = rn.fallback(u); served {
				return nil, false
			}
		}
		if u.Total == 0 {
			rn.refuse(http.StatusServiceUnavailable, fmt.Sprintf("no %s credentials: add one with `subpool add-key %s --label NAME` or `subpool login %s`", rn.prov.Name, rn.prov.Name, rn.prov.Name)+fb, 0)
			return nil, false
		}
		if shortWait {
			rn.waits++
			if rn.waits > maxPoolWaits {
				rn.refuse(http.StatusServiceUnavailable, u.Error(), 0)
				return nil, false
			}
			// A cooldown that ends "now" still needs the clock to pass
			// its instant; never spin on a zero wait.
			d = max(d, time.Millisecond)
			rn.soleWaited += d
			if rn.wait(api.WaitSoleProvider, "", d, u.Error()) != nil {
				return nil, false
			}
			continue
		}
		msg := u.Error()
		status := http.StatusServiceUnavailable
		var retry time.Duration
		if u.HasNext {
			status = http.StatusTooManyRequests
			retry = u.NextReady
			msg += fmt.Sprintf(" — too long to wait automatically (wait.sole_provider_max = %s)", p.o.SoleProviderMax)
		}
		if len(rn.exclude) > 0 && rn.lastReason != "" {
			msg += "; last error: " + rn.lastReason
		}
		rn.refuse(status, msg+fb, retry)
		return nil, false
	}
}

// wait sleeps d on the clock with wait_started/wait_ended around it.
// It returns an error (and marks the request aborted) if the client left.
func (rn *run) wait(kind, credID string, d time.Duration, reason string) error {
	p := rn.p
	until := p.o.Clock.Now().Add(d)
	p.o.Events.Emit(api.Event{Type: api.EventWaitStarted, Provider: rn.prov.Name, CredentialID: credID,
		Kind: kind, WaitMS: d.Milliseconds(), Until: &until, Reason: reason, Model: rn.info.Model})
	err := rn.sleep(d)
	outcome := "ready"
	if err != nil {
		outcome = "aborted"
		rn.class = classify.Aborted
	}
	p.o.Events.Emit(api.Event{Type: api.EventWaitEnded, Provider: rn.prov.Name, CredentialID: credID,
		Kind: kind, Outcome: outcome, Model: rn.info.Model})
	return err
}

func (rn *run) sleep(d time.Duration) error {
	t := rn.p.o.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-rn.ctx.Done():
		return rn.ctx.Err()
	case <-t.C():
		return nil
	}
}

// capacityBackoff is 1s, 2s, 4s … capped at 30s, with equal jitter so
// that many clients waiting on the same overloaded model spread out.
func capacityBackoff(n int, j float64) time.Duration {
	d := time.Second << min(n, 5)
	d = min(d, 30*time.Second)
	return d/2 + time.Duration(float64(d/2)*j)
}

// refuse answers with subpool's own provider-shaped error.
func (rn *run) refuse(status int, msg string, retryAfter time.Duration) {
	rn.status = status
	if rn.class == "" {
		rn.class = classify.Class("refused")
	}
	rn.setHeaders(rn.w.Header(), rn.cred)
	writeError(rn.w, rn.prov.Wire, status, msg, retryAfter)
}

// passThrough gives the client the upstream's own refusal, untouched.
func (rn *run) passThrough(credID string, resp *http.Response, body []byte, class classify.Class) {
	rn.class, rn.cred = class, credID
	if resp == nil {
		rn.refuse(http.StatusBadGateway, rn.lastReason, 0)
		return
	}
	h := rn.w.Header()
	copyHeader(h, resp.Header)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	rn.setHeaders(h, credID)
	rn.status = resp.StatusCode
	rn.w.WriteHeader(resp.StatusCode)
	rn.w.Write(body)
}

func (rn *run) setHeaders(h http.Header, credID string) {
	if credID != "" {
		h.Set("x-subpool-credential", credID)
	}
	h.Set("x-subpool-attempts", strconv.Itoa(rn.attempts))
}

// send makes one upstream request with cred's auth.
func (rn *run) send(cred pool.Credential, auth Auth) (*http.Response, error) {
	base := rn.prov.BaseURL
	if auth.BaseURL != "" {
		base = auth.BaseURL
	}
	path := rn.upath
	if auth.StripV1 {
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
	out.Header = outboundHeader(rn.r.Header, auth.Header)
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
func outboundHeader(in, auth http.Header) http.Header {
	h := make(http.Header, len(in)+len(auth))
	for k, vs := range in {
		if dropOutbound[k] || strings.HasPrefix(k, "X-Subpool-") {
			continue
		}
		h[k] = vs
	}
	for k, vs := range auth {
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
