package goodput

import (
	"math/rand/v2"
	"time"
)

// The baselines treat every refusal alike, as simple gateways do: they
// read no class, scope or reset time. Each gives a request at most 8
// upstream attempts, like subpool's max_attempts.
const baselineAttempts = 8

// attemptOr sends r to key i and serves it if the key answers; a refusal
// runs refused instead.
func (e *env) attemptOr(r *request, i int, refused func()) {
	e.attempt(r, i, func(a answer) {
		if a.ok {
			e.serve(r, nil)
			return
		}
		refused()
	})
}

// startRoundRobin: the next key in turn for every attempt; any refusal
// moves on to the next key at once. No state, no waiting.
func startRoundRobin(e *env) func(r *request) {
	next := 0
	var try func(r *request)
	try = func(r *request) {
		if r.tries >= baselineAttempts {
			e.fail(r, "gave up: max attempts")
			return
		}
		i := next % e.sc.Creds
		next++
		e.attemptOr(r, i, func() { try(r) })
	}
	return try
}

// startFixed: any refusal cools the key for 60 s (LiteLLM's default
// cooldown); keys are taken in turn among those not cooling; when all
// are, the request waits for the first to come back if that is within
// 2 minutes (the same patience subpool's sole_provider_max gives).
func startFixed(e *env) func(r *request) {
	const cool = 60 * time.Second
	const patience = 2 * time.Minute
	until := make([]time.Time, e.sc.Creds)
	next := 0
	var try func(r *request, waited time.Duration)
	try = func(r *request, waited time.Duration) {
		if r.tries >= baselineAttempts {
			e.fail(r, "gave up: max attempts")
			return
		}
		now := e.w.Now()
		pick := -1
		soonest := time.Time{}
		for k := range e.sc.Creds {
			i := (next + k) % e.sc.Creds
			if !now.Before(until[i]) {
				pick = i
				break
			}
			if soonest.IsZero() || until[i].Before(soonest) {
				soonest = until[i]
			}
		}
		if pick < 0 {
			d := soonest.Sub(now)
			if waited+d > patience {
				e.fail(r, "refused: all cooling")
				return
			}
			e.wait(r, d, func() { try(r, waited+d) })
			return
		}
		next = pick + 1
		e.attemptOr(r, pick, func() {
			until[pick] = later(until[pick], e.w.Now().Add(cool))
			try(r, waited)
		})
	}
	return func(r *request) { try(r, 0) }
}

// startJitter: AWS-style exponential backoff with full jitter between
// attempts (sleep uniform in [0, min(30 s, 0.5 s·2ⁿ)]), each attempt on
// the next key in turn. Stateless across requests.
func startJitter(e *env) func(r *request) {
	const base, ceiling = 500 * time.Millisecond, 30 * time.Second
	rng := rand.New(rand.NewPCG(e.sc.Seed, 23))
	next := 0
	var try func(r *request)
	try = func(r *request) {
		i := next % e.sc.Creds
		next++
		e.attemptOr(r, i, func() {
			if r.tries >= baselineAttempts {
				e.fail(r, "gave up: max attempts")
				return
			}
			c := min(ceiling, base<<min(r.tries-1, 16))
			d := time.Duration(rng.Int64N(int64(c) + 1))
			e.wait(r, d, func() { try(r) })
		})
	}
	return try
}
