package goodput

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/subpool/subpool/proxy/classify"
)

// request is one client request.
type request struct {
	id      int
	arrive  time.Duration
	model   string
	done    bool
	served  bool
	end     time.Duration // when the client got its answer (last byte or refusal)
	tries   int           // upstream attempts made for it
	waited  time.Duration // time spent waiting (not in an attempt)
	outcome string        // "served" or why not
}

// env is what a strategy drives: the world, the upstream, the client
// requests. A strategy starts each request at its arrival and must end it
// with serve or fail.
type env struct {
	sc   *Scenario
	w    *World
	up   *upstream
	prof *classify.Profile
	reqs []*request
	// firstOKAfter is the first success at or after each outage's end.
	firstOKAfter []time.Duration
}

// attempt sends r to credential i; then runs when the answer is in (after
// the refusal latency or, for a success, the time to first byte).
func (e *env) attempt(r *request, i int, then func(answer)) {
	r.tries++
	a := e.up.serve(i, r.model)
	d := e.sc.ErrLatency
	if a.ok {
		d = e.sc.TTFB
		t := e.w.since()
		for k, o := range e.sc.Outages {
			if end := o.Start + o.Len; t >= end && e.firstOKAfter[k] < 0 {
				e.firstOKAfter[k] = t - end
			}
		}
	}
	e.w.after(d, func() {
		e.up.delivered(a)
		then(a)
	})
}

// serve streams the rest of a success to the client; release runs when
// the last byte is out.
func (e *env) serve(r *request, release func()) {
	e.w.after(e.sc.Stream, func() {
		if release != nil {
			release()
		}
		e.finish(r, true, "served")
	})
}

func (e *env) fail(r *request, why string) { e.finish(r, false, why) }

func (e *env) finish(r *request, served bool, why string) {
	if r.done {
		panic(fmt.Sprintf("goodput: request %d finished twice", r.id))
	}
	r.done, r.served, r.outcome = true, served, why
	r.end = e.w.since()
}

// wait runs fn after d, counting the wait against r.
func (e *env) wait(r *request, d time.Duration, fn func()) {
	r.waited += d
	e.w.after(d, fn)
}

// Strategy is one policy under comparison.
type Strategy struct {
	Name  string
	Title string
	// start returns the function that handles each request on arrival.
	start func(e *env) func(r *request)
}

// Strategies are the policies compared, subpool's first, the oracle last.
func Strategies() []Strategy {
	return []Strategy{
		{Name: "subpool", Title: "the real proxy/pool, proxy/classify and proxy/policy, on the virtual clock", start: startSubpool(subpoolConfig{})},
		{Name: "round-robin", Title: "no cooldown: the next key on any refusal, ≤ 8 attempts", start: startRoundRobin},
		{Name: "fixed-60s", Title: "a fixed 60 s cooldown on any refusal; waits ≤ 2 min for a key", start: startFixed},
		{Name: "full-jitter", Title: "exponential backoff with full jitter (0.5 s·2ⁿ, cap 30 s) before the next key, ≤ 8 attempts", start: startJitter},
		{Name: "oracle", Title: "knows every quota, outage and storm; never sends a refused call; the same patience as subpool", start: startOracle},
	}
}

// Result is one strategy on one scenario.
type Result struct {
	Scenario string `json:"scenario"`
	Strategy string `json:"strategy"`
	// WhatIf marks a proposed change to subpool, not a policy that exists.
	WhatIf bool `json:"what_if,omitempty"`

	Requests int `json:"requests"`
	Served   int `json:"served"`
	// Goodput is Served / Requests; VsOracle divides it by the oracle's.
	Goodput  float64 `json:"goodput"`
	VsOracle float64 `json:"goodput_vs_oracle"`

	Calls         int     `json:"upstream_calls"`
	Amplification float64 `json:"amplification"` // calls ÷ requests
	Wasted        int     `json:"wasted_calls"`  // calls into an announced cooldown
	Refused429    int     `json:"upstream_429"`
	Refused529    int     `json:"upstream_overloaded"`
	Refused401    int     `json:"upstream_401"`
	Refused500    int     `json:"upstream_500,omitempty"`

	// Balance is max ÷ min successful calls over the credentials that
	// lived through the run; Inf when one was never used.
	Balance float64 `json:"balance"`

	// Completion times (virtual seconds) of served requests.
	P50 float64 `json:"p50_s"`
	P99 float64 `json:"p99_s"`

	// Outage scenarios: the requests that arrived during the outage.
	OutageRequests      int     `json:"outage_requests,omitempty"`
	OutageAmplification float64 `json:"outage_amplification,omitempty"`
	OutageServed        float64 `json:"outage_goodput,omitempty"`
	OutageP99           float64 `json:"outage_p99_s,omitempty"`
	// Recovery: from the outage's end to the first success.
	Recovery float64 `json:"recovery_s,omitempty"`

	Outcomes map[string]int `json:"outcomes"`

	// Models splits requests, served and completion times by model, in
	// the scenario's order, when it mixes several: a policy can serve
	// the pool's total while starving one of them.
	Models []ModelResult `json:"models,omitempty"`
}

// ModelResult is one model's share of a Result.
type ModelResult struct {
	Model    string  `json:"model"`
	Requests int     `json:"requests"`
	Served   int     `json:"served"`
	P50      float64 `json:"p50_s"`
	P99      float64 `json:"p99_s"`
}

// Run plays one strategy on one scenario.
func Run(sc *Scenario, st Strategy) Result {
	sc.defaults()
	w := newWorld()
	return runEnv(&env{sc: sc, w: w, up: newUpstream(sc, w)}, st)
}

func runEnv(e *env, st Strategy) Result {
	sc, w := e.sc, e.w
	e.prof = classify.Lookup(sc.Provider)
	for range sc.Outages {
		e.firstOKAfter = append(e.firstOKAfter, -1)
	}
	handle := st.start(e)
	for i, a := range sc.arrivals() {
		r := &request{id: i, arrive: a.at, model: a.model}
		e.reqs = append(e.reqs, r)
		w.at(Epoch.Add(a.at), func() { handle(r) })
	}
	w.run()
	return e.result(st.Name)
}

func (e *env) result(strategy string) Result {
	res := Result{Scenario: e.sc.Name, Strategy: strategy, Requests: len(e.reqs), Outcomes: map[string]int{}}
	var lat []float64
	for _, r := range e.reqs {
		if !r.done {
			panic(fmt.Sprintf("goodput: %s left request %d unfinished", strategy, r.id))
		}
		res.Outcomes[r.outcome]++
		if r.served {
			res.Served++
			lat = append(lat, (r.end - r.arrive).Seconds())
		}
	}
	c := e.up.counts
	res.Calls, res.Wasted = c.Calls, c.Wasted
	res.Refused429, res.Refused529, res.Refused401, res.Refused500 = c.RateLimited, c.Overloaded, c.Unauthorized, c.ServerErrors
	if res.Requests > 0 {
		res.Goodput = float64(res.Served) / float64(res.Requests)
		res.Amplification = float64(res.Calls) / float64(res.Requests)
	}
	res.P50, res.P99 = Quantile(lat, 0.50), Quantile(lat, 0.99)

	if len(e.sc.Models) > 1 {
		for _, m := range e.sc.Models {
			mr := ModelResult{Model: m.Name}
			var mlat []float64
			for _, r := range e.reqs {
				if r.model != m.Name {
					continue
				}
				mr.Requests++
				if r.served {
					mr.Served++
					mlat = append(mlat, (r.end - r.arrive).Seconds())
				}
			}
			mr.P50, mr.P99 = Quantile(mlat, 0.50), Quantile(mlat, 0.99)
			res.Models = append(res.Models, mr)
		}
	}

	lo, hi := math.Inf(1), 0.0
	for i, c := range e.up.creds {
		if _, dead := e.sc.deadAt(i); dead {
			continue
		}
		lo, hi = min(lo, float64(c.ok)), max(hi, float64(c.ok))
	}
	res.Balance = math.Inf(1)
	if lo > 0 {
		res.Balance = hi / lo
	}

	if len(e.sc.Outages) > 0 {
		o := e.sc.Outages[0]
		var n, tries, served int
		var olat []float64
		for _, r := range e.reqs {
			if o.holds(r.arrive) {
				n++
				tries += r.tries
				if r.served {
					served++
				}
				olat = append(olat, (r.end - r.arrive).Seconds())
			}
		}
		res.OutageRequests = n
		if n > 0 {
			res.OutageAmplification = float64(tries) / float64(n)
			res.OutageServed = float64(served) / float64(n)
			res.OutageP99 = Quantile(olat, 0.99)
		}
		res.Recovery = time.Duration(e.firstOKAfter[0]).Seconds()
	}
	return res
}

// Quantile is the q-quantile of xs (nearest rank); 0 for none.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// RunAll plays every strategy, and each proposal on the scenarios it is
// about, and fills VsOracle. Runs are independent worlds, so they run in
// parallel; each is deterministic, so the results do not depend on it.
func RunAll(scs []*Scenario) []Result {
	type job struct {
		sc     *Scenario
		st     Strategy
		whatIf bool
		out    *Result
	}
	var jobs []job
	per := make([][]Result, len(scs))
	for i, sc := range scs {
		sc.defaults()
		n := len(Strategies())
		for _, pr := range Proposals() {
			if slices.Contains(pr.Scenarios, sc.Name) {
				n++
			}
		}
		per[i] = make([]Result, n)
		k := 0
		for _, st := range Strategies() {
			jobs = append(jobs, job{sc, st, false, &per[i][k]})
			k++
		}
		for _, pr := range Proposals() {
			if slices.Contains(pr.Scenarios, sc.Name) {
				jobs = append(jobs, job{sc, pr.Strategy, true, &per[i][k]})
				k++
			}
		}
	}
	// The longest first, so the last worker is not left with one.
	slices.SortStableFunc(jobs, func(a, b job) int { return int(b.sc.Duration/time.Second - a.sc.Duration/time.Second) })
	ch := make(chan job)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				*j.out = Run(j.sc, j.st)
				j.out.WhatIf = j.whatIf
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	var out []Result
	for _, rs := range per {
		oracle := 0.0
		for _, r := range rs {
			if r.Strategy == "oracle" {
				oracle = r.Goodput
			}
		}
		for i := range rs {
			if oracle > 0 {
				rs[i].VsOracle = rs[i].Goodput / oracle
			}
		}
		out = append(out, rs...)
	}
	return out
}

// What issue 27 asks of subpool in every scenario: goodput at least
// MinVsOracle of the oracle's, with at most Max429Share of its upstream
// attempts refused 429. The bench judges them (bench/judge.go), and
// TestScenariosMeetIssue27 holds the simulator to them.
const (
	MinVsOracle = 0.98
	Max429Share = 0.10
)

// Share429 is the share of r's upstream attempts refused 429.
func (r Result) Share429() float64 { return float64(r.Refused429) / float64(max(r.Calls, 1)) }
