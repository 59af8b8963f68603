// Package policy decides what the proxy does next. It is pure: from what a
// request has been through so far, the classifier's verdict on the latest
// answer, and what the pool says, it returns one Action. It reads no clock,
// does no I/O and changes nothing; the attempt loop in package proxy only
// carries actions out. Every rule is a row of policy_test.go.
package policy

import (
	"fmt"
	"net/http"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
)

// Kind is what to do next.
type Kind int

const (
	// Pass gives the upstream's answer to the client as it came: a
	// success, or a stream whose bytes already reached the client.
	Pass Kind = iota
	// Relay gives the client the upstream's refusal: the HTTP error, or an
	// in-stream error as the HTTP error it stands for (Action.Status).
	Relay
	// Rotate tries another credential at once.
	Rotate
	// Retry tries the same credential again after Delay, keeping its slot.
	Retry
	// WaitCapacity waits Delay with the slot released, then tries the same
	// credential: an overloaded model is overloaded for every credential.
	WaitCapacity
	// Refresh renews the credential's token, then tries it again.
	Refresh
	// WaitPool waits until something in the pool may be ready, at most
	// Delay.
	WaitPool
	// Exhausted ends the loop with nothing written: no credential of this
	// provider can serve the request in time. Serving may detour to a
	// fallback provider; otherwise the client gets Status and Message,
	// with RetryAfter when a time is known.
	Exhausted
	// Fail answers the client with subpool's own error (Status, Message).
	Fail
	// Stop ends the request: the client left.
	Stop
)

var kindNames = [...]string{"pass", "relay", "rotate", "retry", "wait_capacity", "refresh", "wait_pool", "exhausted", "fail", "stop"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Action is one decision: what to do, and what the pool must record before
// it is done.
type Action struct {
	Kind Kind
	// Delay is the wait for Retry, WaitCapacity and WaitPool.
	Delay time.Duration
	// Status and Message are the answer for Relay (Status only), Fail
	// and Exhausted; RetryAfter goes with an Exhausted answer.
	Status     int
	Message    string
	RetryAfter time.Duration
	// Final marks a Fail or Exhausted answer that retrying cannot change
	// soon: the client is told not to retry (x-should-retry: false), so its
	// own retry loop neither hides the message nor repeats the wait.
	Final bool

	// Cool, when set, is a rate limit to record on the pool.
	Cool *Cool
	// CoolLater, when set, is a cooldown recorded once the request is
	// done with the provider, not now: the request has excluded the
	// credential and must not wait for the cooldown's end; the requests
	// after it keep off the credential for its length.
	CoolLater *Cool
	// Park, when set, takes the credential (or one model of it) out until
	// the user acts.
	Park *Park
	// Exclude keeps the credential out of the rest of this request only.
	Exclude bool
	// BarTool keeps the request's tool off the credential for a while:
	// the credential refused that tool, not the request.
	BarTool bool
	// Count says how the attempt counts on the credential: a success, a
	// rate limit, or a failure. CountNone leaves the counters alone (the
	// client left, or the attempt will be made again in place).
	Count Count
}

// Cool is a rate limit to record: on the credential, one model of it, or
// the whole provider, for RetryAfter (the upstream's time) or the
// ladder's next step when 0.
type Cool struct {
	Scope      classify.Scope
	RetryAfter time.Duration
}

// Park is a park to record: api.ParkRelogin, api.ParkPayment or
// api.ParkRegion (every credential sharing the egress), for Model only
// when set.
type Park struct {
	Kind   string
	Model  string
	Reason string
}

// Count is how an attempt counts on its credential.
type Count int

const (
	CountNone Count = iota
	CountSuccess
	CountFailure
	CountRateLimit
)

// Config is the part of the proxy's settings the policy reads.
type Config struct {
	// TransientBackoff is the wait before each in-place retry of a
	// transient failure; its length is the number of retries.
	TransientBackoff []time.Duration
	// CapacityMax is the wall-clock budget for an overloaded model, from
	// its first capacity answer; 0 relays the first one.
	CapacityMax time.Duration
	// MaxAttempts bounds the upstream attempts of one request.
	MaxAttempts int
	// SoleProviderMax is the longest the pool is waited for in one
	// request, all waits together.
	SoleProviderMax time.Duration
	// MaxPoolWaits bounds how often one request waits for the pool; each
	// wait ends when the pool says something changed.
	MaxPoolWaits int
	// FirstEventTimeout bounds a stream's time from its headers to its
	// first content event; IdleTimeout the time between two bytes of any
	// answer's body. 0 is no deadline. See docs/providers.md, "Stream
	// deadlines", for why the defaults are what they are.
	FirstEventTimeout time.Duration
	IdleTimeout       time.Duration
}

// DefaultMaxBody bounds a request body unless max_body says otherwise.
const DefaultMaxBody = 32 << 20

// Defaults is the policy a fresh config.toml gives; config.Default and
// the proxy's zero Options take their values from here, so each default
// is written once.
func Defaults() Config {
	return Config{
		TransientBackoff: []time.Duration{250 * time.Millisecond, 750 * time.Millisecond},
		CapacityMax:      5 * time.Minute,
		MaxAttempts:      8,
		SoleProviderMax:  2 * time.Minute,
		MaxPoolWaits:     1000,
		// Under Claude Code's 180 s byte watchdog (it sees no byte while
		// subpool holds a stream's preamble back) and over a long prompt's
		// 60-90 s to its first token.
		FirstEventTimeout: 2 * time.Minute,
		// Under the shortest client stream deadline (Claude Code's 180 s),
		// so the client gets an error event it acts on, not a timeout.
		IdleTimeout: 150 * time.Second,
	}
}

// Attempt is what the request has been through, as it bears on the
// answer just classified.
type Attempt struct {
	// Attempts is the number of upstream attempts made, this one included.
	Attempts int
	// Model is the model the request names ("" when none).
	Model string
	// Status is the status the answer arrived with (0 when none did).
	Status int
	// Retries is the number of in-place transient retries already made on
	// this credential.
	Retries int
	// CanRefresh: the credential is a login whose token can be renewed.
	CanRefresh bool
	// Refreshed: its token was already renewed during this request.
	Refreshed bool
	// CapacityElapsed is the time since the request's first capacity
	// answer; CapacityWaits the capacity waits made. Both 0 at the first.
	CapacityElapsed time.Duration
	CapacityWaits   int
	// Jitter is a value in [0,1) spreading capacity waits.
	Jitter float64
	// Started: bytes of this answer already reached the client, so
	// nothing can be retried without duplicating output.
	Started bool
	// Stalled: the transient is a deadline of the answer's (no first
	// event, or a silence), before anything reached the client.
	Stalled bool
	// Provider names the upstream in subpool's own messages.
	Provider string
}

// Reason is a verdict's reason in subpool's words: its own, or its class
// when it gives none.
func Reason(v classify.Verdict) string {
	if v.Reason == "" {
		return string(v.Class)
	}
	return v.Reason
}

// Decide turns the verdict on one attempt's answer into an action.
func Decide(c Config, a Attempt, v classify.Verdict) Action {
	reason := Reason(v)
	if a.Started {
		return afterStart(a, v, reason)
	}
	act := decide(c, a, v, reason)
	// Every way round again is bounded by the request's attempts.
	switch act.Kind {
	case Rotate, Retry, WaitCapacity, Refresh:
		if c.MaxAttempts > 0 && a.Attempts >= c.MaxAttempts {
			outOfAttempts(&act, a, v, reason)
		}
	}
	return act
}

// outOfAttempts turns act into the request's last answer once its
// attempts are spent. Every credential had its turn: the client's retries
// would make as many attempts again, so it is told not to (Final). A
// budget spent on rate limits says so, as the 429 it is, with the
// upstream's time (the proxy puts the pool's earliest one in its place
// when it knows one): a 502 told the client the opposite of what happened.
func outOfAttempts(act *Action, a Attempt, v classify.Verdict, reason string) {
	act.Kind = Fail
	act.Delay = 0
	act.Final = true
	act.Status = http.StatusBadGateway
	act.Message = fmt.Sprintf("gave up after %d upstream attempts (retry.max_attempts); last: %s", a.Attempts, reason)
	if v.Class == classify.RateLimit {
		act.Status = http.StatusTooManyRequests
		act.RetryAfter = v.RetryAfter
		act.Message = fmt.Sprintf("%s is rate limited on every credential tried: subpool made %d upstream attempts (retry.max_attempts); last: %s", a.Provider, a.Attempts, reason)
	}
	if act.Count == CountNone {
		act.Count = CountFailure
	}
}

func decide(c Config, a Attempt, v classify.Verdict, reason string) Action {
	switch v.Class {
	case classify.OK:
		return Action{Kind: Pass, Count: CountSuccess}

	case classify.ClientError:
		if v.Tool {
			// The credential refused this tool (a Claude login asked by
			// another app, or out of the extra usage that app draws on):
			// it still serves its own tool, so nothing cools or parks;
			// the tool is kept off it and another credential tried.
			return Action{Kind: Rotate, BarTool: true}
		}
		// The request itself is wrong: the credential served it as well
		// as any other would.
		return Action{Kind: Relay, Status: relayStatus(a, v), Count: CountSuccess}

	case classify.Aborted:
		return Action{Kind: Stop}

	case classify.RateLimit:
		return Action{Kind: Rotate, Cool: coolFor(a, v), Count: CountRateLimit}

	case classify.Transient:
		return transient(c, a, v, reason)

	case classify.Capacity:
		if c.CapacityMax <= 0 {
			// Waiting is off: the client's own retries do the waiting.
			return Action{Kind: Relay, Status: relayStatus(a, v), Count: CountFailure}
		}
		left := c.CapacityMax - a.CapacityElapsed
		if left <= 0 {
			// The budget is the wait: relaying the overload as it came
			// would have the client's retry loop start it again (an SDK
			// create() spent 3 budgets that way). Our own 503 with
			// x-should-retry: false ends it, and carries no
			// overloaded_error type, which Claude Code retries whatever
			// the header says.
			return Action{Kind: Fail, Status: http.StatusServiceUnavailable, Count: CountFailure, Final: true,
				Message: fmt.Sprintf("%s is overloaded upstream (%s); subpool waited it out for %s (wait.capacity_max) and gave up — try again in a few minutes, or pick another model",
					a.Provider, reason, c.CapacityMax)}
		}
		d := v.RetryAfter
		if d <= 0 {
			d = CapacityBackoff(a.CapacityWaits, a.Jitter)
		}
		return Action{Kind: WaitCapacity, Delay: min(d, left)}

	case classify.AuthExpired, classify.AuthInvalid:
		if !a.CanRefresh {
			return Action{Kind: Rotate, Count: CountFailure, Park: &Park{Kind: api.ParkRelogin, Reason: reason}}
		}
		if a.Refreshed {
			// A fresh token refused again: only a new login helps.
			return Action{Kind: Rotate, Count: CountFailure, Park: &Park{Kind: api.ParkRelogin, Reason: "still rejected after a token refresh: " + reason}}
		}
		// A login's 401 often means an expired access token even when the
		// upstream says "invalid": one refresh tells the two apart.
		return Action{Kind: Refresh}

	case classify.Payment:
		return Action{Kind: Rotate, Count: CountFailure, Park: parkPayment(a, v, reason)}

	case classify.RegionBlocked:
		// The egress's location is refused: the pool parks every
		// credential leaving from it, so the request goes on to one with
		// another proxy, or subpool answers with what to set, and later
		// requests make no upstream call for it.
		return Action{Kind: Rotate, Count: CountFailure, Park: &Park{Kind: api.ParkRegion, Reason: reason}}
	}
	// An unknown class is a classifier bug: pass the answer on rather
	// than guess.
	return Action{Kind: Relay, Status: relayStatus(a, v), Count: CountFailure}
}

// transient decides on a transient failure: retried in place, or our
// answer once the in-place retries are spent; a stall moves on at once.
func transient(c Config, a Attempt, v classify.Verdict, reason string) Action {
	if a.Stalled {
		// The wait was the deadline's whole length: another credential
		// is tried at once, this one not again in this request, and
		// the next requests go elsewhere for a while.
		return Action{Kind: Rotate, Exclude: true, Count: CountFailure, CoolLater: stallCool()}
	}
	if a.Retries < len(c.TransientBackoff) {
		return Action{Kind: Retry, Delay: c.TransientBackoff[a.Retries]}
	}
	// Our words, naming the cause: the client learns it was retried.
	// The status is the upstream's failure where it gave one.
	status := http.StatusBadGateway
	if st := relayStatus(a, v); st >= 500 {
		status = st
	}
	return Action{Kind: Fail, Status: status, Count: CountFailure,
		Message: fmt.Sprintf("%s upstream failed %d times in a row (%s); try again shortly", a.Provider, a.Retries+1, reason)}
}

// afterStart: the client has bytes of this answer, so it gets the rest as
// the upstream sends it, ending with the upstream's own error event. The
// pool still learns from the error, so the next request goes elsewhere.
func afterStart(a Attempt, v classify.Verdict, reason string) Action {
	act := Action{Kind: Pass}
	switch v.Class {
	case classify.OK, classify.ClientError:
		act.Count = CountSuccess
	case classify.Aborted:
		act.Kind = Stop
	case classify.RateLimit:
		act.Cool, act.Count = coolFor(a, v), CountRateLimit
	case classify.Payment:
		act.Park, act.Count = parkPayment(a, v, reason), CountFailure
	case classify.RegionBlocked:
		act.Park, act.Count = &Park{Kind: api.ParkRegion, Reason: reason}, CountFailure
	default:
		act.Count = CountFailure
	}
	return act
}

// StallCooldown is how long a credential whose answer stalled is left
// out of new requests: long enough that the client's own retry, which
// follows a stall at once, lands on another credential; short enough
// that a sole credential is tried again within wait.sole_provider_max.
const StallCooldown = 30 * time.Second

func stallCool() *Cool { return &Cool{Scope: classify.ScopeCredential, RetryAfter: StallCooldown} }

func coolFor(a Attempt, v classify.Verdict) *Cool {
	scope := classify.ScopeCredential
	switch v.Scope {
	case classify.ScopeModel:
		if a.Model != "" {
			scope = classify.ScopeModel
		}
	case classify.ScopeProvider:
		scope = classify.ScopeProvider
	}
	return &Cool{Scope: scope, RetryAfter: v.RetryAfter}
}

func parkPayment(a Attempt, v classify.Verdict, reason string) *Park {
	pk := &Park{Kind: api.ParkPayment, Reason: reason}
	if v.Scope == classify.ScopeModel {
		pk.Model = a.Model
	}
	return pk
}

// relayStatus is the status a relayed refusal goes out with: the one it
// came with, or for an error inside a 200 stream, the status that error
// type has on that API.
func relayStatus(a Attempt, v classify.Verdict) int {
	if a.Status >= 400 {
		return a.Status
	}
	if v.Status >= 400 {
		return v.Status
	}
	return http.StatusBadGateway
}

// AuthError decides about a credential whose auth could not be prepared
// (a token refresh failed). relogin: only the user can fix it (a dead
// refresh token). Anything else (a locked keychain, a refresh endpoint
// down) keeps the credential out of this request only; the next request
// tries it again.
func AuthError(relogin bool, reason string) Action {
	if relogin {
		return Action{Kind: Rotate, Park: &Park{Kind: api.ParkRelogin, Reason: reason}}
	}
	return Action{Kind: Rotate, Exclude: true}
}

// Unavailable is what the pool says when no credential can take the
// request now.
type Unavailable struct {
	// Total credentials of the provider; Busy ones at their in-flight
	// limit (they free up when a request ends).
	Total, Busy int
	// NextReady is the shortest wait until a cooling credential is usable
	// again; HasNext whether there is one.
	NextReady time.Duration
	HasNext   bool
	// Why is the pool's own sentence.
	Why string
}

// Waited is the request's waits for the pool so far.
type Waited struct {
	Total time.Duration
	Count int
}

// WhenUnavailable decides what a request does when no credential can take
// it: wait for the pool when it will be ready soon enough, else end the
// loop (Exhausted) for serving to detour or refuse.
func WhenUnavailable(c Config, w Waited, u Unavailable) Action {
	if u.Total == 0 {
		return Action{Kind: Exhausted, Status: http.StatusServiceUnavailable, Message: u.Why, Final: true}
	}
	left := c.SoleProviderMax - w.Total
	if c.MaxPoolWaits <= 0 || w.Count < c.MaxPoolWaits {
		switch {
		case u.HasNext && u.NextReady <= 0:
			// A cooldown ending now still needs its instant to pass.
			return Action{Kind: WaitPool, Delay: time.Millisecond}
		case u.HasNext && u.NextReady <= left:
			return Action{Kind: WaitPool, Delay: u.NextReady}
		case u.Busy > 0 && left > 0:
			// A slot frees up when a request ends; the pool says when.
			return Action{Kind: WaitPool, Delay: left}
		}
	}
	if u.HasNext {
		msg := u.Why
		if left < u.NextReady {
			msg += fmt.Sprintf(" — too long to wait automatically (wait.sole_provider_max = %s)", c.SoleProviderMax)
		}
		return Action{Kind: Exhausted, Status: http.StatusTooManyRequests, Message: msg, RetryAfter: u.NextReady}
	}
	// No time is known. Busy credentials free up as other requests end;
	// the rest (parked, paused, kept from this tool) wait on a person.
	return Action{Kind: Exhausted, Status: http.StatusServiceUnavailable, Message: u.Why, Final: u.Busy == 0}
}

// CapacityBackoff is 1s, 2s, 4s … capped at 30s, with equal jitter j in
// [0,1) so that many clients waiting on the same overloaded model spread
// out.
func CapacityBackoff(n int, j float64) time.Duration {
	d := time.Second << min(n, 5)
	d = min(d, 30*time.Second)
	return d/2 + time.Duration(float64(d/2)*j)
}
