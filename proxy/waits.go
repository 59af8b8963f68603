package proxy

// Waits: for the pool when no credential can take the request now, and
// the sleeps of in-place retries and capacity waits, all on the clock and
// ended early when the client leaves.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/pool"
)

// errClientLeft is lease's error when the client went away during a wait.
var errClientLeft = errors.New("the client went away")

// exhaustedError is lease's error when no credential of the run's
// provider can serve the request in time: the policy's refusal, which the
// run answers or the plan walk takes to another target.
type exhaustedError struct{ act policy.Action }

func (e *exhaustedError) Error() string { return e.act.Message }

// lease picks the credential for the next attempt. When none can take the
// request, the policy says whether to wait for the pool; a wait ends when
// the pool says something changed (a release, a cooldown's end, a
// credential added or resumed), not on a poll. One wait_started /
// wait_ended pair covers the whole wait, however many wake-ups it takes.
// It tries t's pin first and leaves out t's exclusions; mayWait false
// gives up at once rather than wait for the pool. It fails with
// errClientLeft or an *exhaustedError.
func (rn *run) lease(t tries, mayWait bool) (*pool.Lease, error) {
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
		if t.pin != "" {
			l, err := pl.Acquire(t.pin, rn.model)
			if err == nil {
				end("ready")
				return l, nil
			}
			t.pin = ""
		}
		l, err := pl.Pick(pool.PickRequest{Provider: rn.prov.Name, Model: rn.model, Affinity: rn.info.Affinity, Exclude: t.exclude, Tool: rn.tool})
		if err == nil {
			end("ready")
			return l, nil
		}
		var u *pool.Unavailable
		if !errors.As(err, &u) {
			end("failed")
			return nil, &exhaustedError{policy.Action{Kind: policy.Exhausted, Status: http.StatusServiceUnavailable, Message: err.Error(), Final: true}}
		}
		if changed == nil {
			changed = pl.Changed()
			continue
		}
		pol := rn.pol
		if !mayWait {
			pol.SoleProviderMax = 0
		}
		act := policy.WhenUnavailable(pol, rn.waited, rn.view(u, t))
		if act.Kind != policy.WaitPool {
			end("gave_up")
			return nil, &exhaustedError{act}
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
			end("aborted")
			return nil, errClientLeft
		}
	}
}

// view is the pool's answer as the policy reads it, with the last reason
// of the loop's tries t when some credential was left out.
func (rn *run) view(u *pool.Unavailable, t tries) policy.Unavailable {
	why := u.Error()
	if u.Total == 0 {
		why = fmt.Sprintf("no %s credentials: add one with `subpool add-key %s --label NAME` or `subpool login %s`", rn.prov.Name, rn.prov.Name, rn.prov.Name)
	} else if len(t.exclude) > 0 && t.lastReason != "" {
		why += "; last error: " + t.lastReason
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

func jitter() float64 { return rand.Float64() }
