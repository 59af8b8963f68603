package pool

import "time"

// Pacing: where the upstream refuses with 429s that name no reset and
// reports no budget, the pool learns each limit key's window (a
// credential, one model of it, or an egress provider's IP): how many
// requests it takes (n) and how long it takes to refill (period). The
// key then spends its n and waits for the window's end, as it does for a
// budget the upstream reports (budget.go), so the next request goes to
// another credential, or waits for the earliest refill, instead of being
// refused. Without it every such key ran into its limit again after each
// guessed cooldown, and while all were cooling the outage probes went
// every 2 s: the bench's steady-silent (8 keys at 1.5× their quota) had
// 71 % of its upstream calls refused.
//
// A window starts when the key comes back: its first success after a run
// of refusals. Then:
//
//   - A refusal after part of the window was served (a miss) says what
//     the window takes: n is what was sent in it, less the refusals of
//     requests sent with it. The key waits for the window's end, with no
//     cooldown; the ladder starts over, since the key served between.
//   - The window's length is learned from one comeback to the next: from
//     the window's start to the last refusal before the comeback, plus
//     half the gap to the comeback when that is short. The earlier bound,
//     because an end that comes early costs one refusal, one that comes
//     late can cost a whole window. Until the length is known, the key
//     takes its n at once, then one request at a time, until refused.
//   - A success right after a miss, with only the one refusal between, is
//     no refill (a window does not refill the moment it runs out): the
//     limit frees requests one by one (a rolling window, a token bucket),
//     and the window goes on, one request at a time.
//   - At the window's end one request goes alone. Served: the window
//     refilled by then, and the next end is expected a little sooner
//     (paceShrink); after paceGrowEvery such windows in a row, n grows by
//     an eighth (at least one), to find room the window may have, and each
//     time that does not fit, the wait for the next try doubles.
//   - Refused with no success between (the window spent, its refill not
//     come): one request at a time, each wait twice the last, from the
//     window's spacing (period ÷ n). Waits shorter than the ladder's first
//     step hold the key; from there on the ladder cools it as it does any
//     silent 429, so a limit that lasts gets the ladder.
//   - The headers telling the truth end it: a 429 with a reset time, a
//     request budget, or usage windows reported for the credential, as
//     do a quiet spell (reset_after with no request on the key) and Reset.
//     Paces are not kept in State: the first refusal after a restart
//     starts anew.
//
// A pace starts at a key's first silent 429, which the ladder cools as
// before, from the successes the key had since it was last quiet: half of
// them is its first n (the count may span two windows), their spacing its
// first backoff. A key that never served has no pace, only the ladder.

// Tuning, chosen on the bench's steady-silent and the window shapes of
// pace_test.go.
const (
	// paceShrink is how much sooner the next end is expected after a
	// window that refilled by its end.
	paceShrink = 0.99
	// paceGrowEvery is the number of windows in a row refilled by their
	// end after which the key tries paceGrowBy-th more requests per
	// window (at least one); paceGrowMax bounds the wait that doubles each
	// time that did not fit.
	paceGrowEvery = 4
	paceGrowBy    = 8
	paceGrowMax   = 64
	// paceMinOK is how many successes a key needs before its first
	// refusal starts a pace.
	paceMinOK = 2
	// paceMinPeriod bounds a learned window from below: a comeback right
	// after a refusal measures the refusal's latency, not a window.
	paceMinPeriod = time.Second
)

// pacer is one limit key's learned window. Guarded by Pool.mu.
type pacer struct {
	scope Scope
	model string
	// n and period are the window learned: requests it takes, and how
	// long until it refills. period is 0 until the second comeback.
	n      int
	period time.Duration
	// start is when the current window began (the key's last comeback);
	// zero before the first. sent counts the leases in it, refused the
	// refusals of a miss in it.
	start         time.Time
	sent, refused int
	// refill: the lease out is the one request after a spent window's
	// end.
	refill bool
	// clean counts the windows in a row refilled by their end; after
	// growEvery of them n grows (grown), and growEvery doubles each time
	// the window did not take it.
	clean, growEvery int
	grown            bool
	// missed: the last answer was a refusal and no success came since;
	// brief: the run is a miss held for its spacing, no more. missSeq is
	// the lease count at that refusal (the credential's, the pool's for a
	// provider's pace): an answer while no lease was taken since is to a
	// request sent before it. hold is the run's last wait, which the next
	// refusal doubles; next is when a hold lets the key go again; last is
	// the run's last refusal.
	missed, brief bool
	missSeq       uint64
	hold          time.Duration
	next, last    time.Time
	// unit is the backoff's first wait before the window is known.
	unit time.Duration
	used time.Time // the last lease, for the quiet spell
}

// end is when the current window ends, zero while not known.
func (pc *pacer) end() time.Time {
	if pc.start.IsZero() || pc.period <= 0 {
		return time.Time{}
	}
	return pc.start.Add(pc.period)
}

// spacing is the backoff's first wait: the window's length over what it
// takes, or, before the length is known, the spacing the pace began with.
func (pc *pacer) spacing() time.Duration {
	if pc.n > 0 && pc.period > 0 {
		return pc.period / time.Duration(pc.n)
	}
	return pc.unit
}

// heldUntil is when the pace lets the key's next request go, zero when
// it may go now.
func (pc *pacer) heldUntil(now time.Time) time.Time {
	if pc.missed {
		if now.Before(pc.next) {
			return pc.next
		}
		return time.Time{}
	}
	if e := pc.end(); pc.sent >= pc.n && now.Before(e) {
		return e
	}
	return time.Time{}
}

// alone reports that the key's next request goes alone: while it is
// refused, after a spent window's end, and past n in a window whose
// length is not known yet.
func (pc *pacer) alone() bool {
	return pc.missed || pc.refill || (pc.period <= 0 && pc.sent >= pc.n)
}

// stamp is the lease count a refusal on pc is stamped with.
func (p *Pool) stamp(pc *pacer, c *cred) uint64 {
	if pc.scope == ScopeProvider {
		return p.seq
	}
	return c.seq
}

// meter counts a key's successes since it was last quiet: what a new
// pace starts from.
type meter struct {
	n           int
	since, last time.Time
}

func (m *meter) ok(now, quiet time.Time) {
	if m.n == 0 || m.last.Before(quiet) {
		m.n, m.since = 0, now
	}
	m.n++
	m.last = now
}

// spacing is the time per success the meter saw up to now, 0 when too
// few to tell.
func (m *meter) spacing(now, quiet time.Time) time.Duration {
	if m.n < paceMinOK || m.last.Before(quiet) || !now.After(m.since) {
		return 0
	}
	return now.Sub(m.since) / time.Duration(m.n)
}

// paceLease counts a lease taken at now in the windows of the paces on c
// for model; the first after a spent window's end is its refill probe,
// and a window not spent by its end is followed by the next. Requires
// p.mu.
func (p *Pool) paceLease(c *cred, model string, now time.Time) {
	if c.prov.pace == nil && len(c.paces) == 0 {
		return
	}
	p.pacers(c, model, now, func(pc *pacer) {
		pc.used = now
		if e := pc.end(); !pc.missed && !e.IsZero() && !now.Before(e) {
			if pc.sent >= pc.n {
				pc.refill = true
			} else {
				pc.start = pc.start.Add(now.Sub(pc.start) / pc.period * pc.period)
				pc.sent, pc.refused = 0, 0
			}
		}
		pc.sent++
	})
}

// paceOK counts a success on c for model. The first after a run of
// refusals is a comeback, and the refill probe's says the window refilled
// by its end: either starts the next window. Requires p.mu.
func (p *Pool) paceOK(c *cred, model string, now time.Time) {
	quiet := p.quietSince(now)
	c.met.ok(now, quiet)
	c.prov.met.ok(now, quiet)
	p.pacers(c, model, now, func(pc *pacer) {
		switch {
		case pc.missed && p.stamp(pc, c) == pc.missSeq:
			// Sent before the refusal, in the window already counted.
			return
		case pc.missed && pc.brief:
			// Served right after the miss: the window goes on, one request
			// at a time, and takes what it served.
			pc.n = max(pc.n, pc.sent-pc.refused)
			pc.missed, pc.brief, pc.refused, pc.hold, pc.next = false, false, 0, 0, time.Time{}
			return
		case pc.missed:
			if !pc.start.IsZero() {
				gap := min(now.Sub(pc.last), pc.spacing())
				pc.period = max(pc.last.Sub(pc.start)+gap/2, time.Duration(float64(pc.period)*paceShrink), paceMinPeriod)
			}
		case pc.refill:
			pc.period = time.Duration(float64(pc.period) * paceShrink)
			pc.clean++
			if pc.grown {
				// The window took the more: the next try comes sooner.
				pc.grown, pc.growEvery = false, max(pc.growEvery/2, paceGrowEvery)
			}
			if pc.clean >= max(pc.growEvery, paceGrowEvery) {
				pc.n += max(pc.n/paceGrowBy, 1)
				pc.clean, pc.grown = 0, true
			}
		default:
			if pc.period <= 0 && pc.sent > pc.n {
				pc.n = pc.sent // one alone past n, served: the window takes it
			}
			return
		}
		pc.start, pc.sent, pc.refused = now, 1, 0
		pc.missed, pc.brief, pc.refill, pc.hold, pc.next = false, false, false, 0, time.Time{}
	})
}

// paceSilent is what a silent 429 (no reset time) at now does to the pace
// of key k, which is not cooling; c is the refused credential. held: the
// key waits for its pace until until, and the ladder is not to take the
// hit; otherwise the ladder cools it as it does any silent 429. Requires
// p.mu.
func (p *Pool) paceSilent(c *cred, k key, now time.Time) (until time.Time, held bool) {
	pc := k.pacer()
	quiet := p.quietSince(now)
	if pc != nil && pc.used.Before(quiet) {
		k.setPacer(nil)
		pc = nil
	}
	if pc == nil {
		// The limit itself, on a key with no pace yet: the ladder takes
		// it, and the pace starts from the successes before it.
		m := k.meter()
		if d := m.spacing(now, quiet); d > 0 {
			pc = &pacer{scope: k.scope(), model: k.model, n: max(m.n/2, 1), unit: d, missed: true, used: now}
			pc.missSeq = p.stamp(pc, c)
			p.pruneQuiet(c, quiet)
			k.setPacer(pc)
		}
		return time.Time{}, false
	}
	seq := p.stamp(pc, c)
	switch {
	case pc.missed && seq == pc.missSeq:
		// Sent before the last refusal was seen: the same event. A miss's
		// window took one request fewer than was thought.
		if pc.refused > 0 && pc.n > 1 {
			pc.refused++
			pc.n--
		}
		return later(pc.next, now), true
	case pc.missed:
		// Refused again with no success between: the window is spent, and
		// refills at a time nobody said.
		pc.missSeq, pc.refused, pc.last, pc.brief = seq, 0, now, false
		return p.paceBackoff(pc, now, 2*pc.hold)
	case pc.refill:
		// The one request after the window's end: not refilled yet.
		pc.refill = false
		pc.missed, pc.missSeq, pc.last = true, seq, now
		return p.paceBackoff(pc, now, pc.spacing())
	}
	// A miss.
	pc.refused = 1
	pc.n = max(pc.sent-1, 1)
	pc.clean = 0
	if pc.grown {
		pc.grown = false
		pc.growEvery = min(2*max(pc.growEvery, paceGrowEvery), paceGrowMax)
	}
	pc.missed, pc.missSeq, pc.last = true, seq, now
	k.setMemory(ladderMem{})
	if e := pc.end(); now.Before(e) {
		// Refused at the end too, it backs off from its spacing.
		pc.hold, pc.next = 0, e
		return e, true
	}
	pc.brief = true
	return p.paceBackoff(pc, now, pc.spacing())
}

// paceBackoff holds the key for d (at least its spacing) while that is
// shorter than the ladder's first step; from there on the ladder times
// the refusals. Requires p.mu.
func (p *Pool) paceBackoff(pc *pacer, now time.Time, d time.Duration) (time.Time, bool) {
	pc.hold = max(d, pc.spacing(), time.Millisecond)
	if pc.hold >= p.lad.steps[0] {
		pc.next = time.Time{}
		return time.Time{}, false
	}
	pc.next = now.Add(pc.hold)
	return pc.next, true
}

// paceCooled notes the cooldown the ladder gave a silent 429 on key k:
// the next refusal in the run doubles it.
func paceCooled(k key, d time.Duration) {
	if pc := k.pacer(); pc != nil && pc.missed {
		pc.hold = d
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
