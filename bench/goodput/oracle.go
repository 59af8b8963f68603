package goodput

import (
	"fmt"
	"slices"
	"time"
)

// startOracle: a scheduler that knows every quota, window, revoked key,
// outage and storm, so it never sends a call that will be refused. Each
// request, in arrival order, gets the earliest moment a key has quota left
// (counting the slots it already promised), on the key whose window ends
// soonest (unused quota is lost when a window ends), and waits for that
// moment if it comes within subpool's own patience: 2 minutes
// (sole_provider_max), 5 while a storm is blowing (capacity_max). For
// requests that all wait equally long at most, serving them in arrival
// order at the earliest free slot is what maximises the number served, so
// no strategy can serve more within the same patience.
func startOracle(e *env) func(r *request) {
	o := &oracle{e: e, planned: map[oracleSlot]int{}, used: make([]int, e.sc.Creds)}
	return o.schedule
}

// The oracle's patience: sole_provider_max, and capacity_max while a
// storm is blowing.
const oraclePatience, oracleStormPatience = 2 * time.Minute, 5 * time.Minute

// oracleSlot is one key's quota window for one bucket of models.
type oracleSlot struct {
	cred   int
	bucket string
	win    int64
}

// oracle is startOracle's state: the slots it promised and the calls
// each key took.
type oracle struct {
	e       *env
	planned map[oracleSlot]int
	used    []int
}

// usable reports whether key i can take a call for model at t, with the
// index and end of its window then.
func (o *oracle) usable(i int, t time.Duration, model string) (int64, time.Duration, bool) {
	sc := o.e.sc
	if at, dead := sc.deadAt(i); dead && t >= at {
		return 0, 0, false
	}
	for _, s := range sc.Outages {
		if s.holds(t) {
			return 0, 0, false
		}
	}
	for _, s := range append(slices.Clone(sc.Storms), sc.Faults...) {
		if s.holds(t) {
			return 0, 0, false
		}
	}
	idx, end := o.e.up.windowOf(i, t)
	if o.planned[oracleSlot{i, sc.bucket(model), idx}] >= sc.quota(model) {
		return 0, 0, false
	}
	return idx, end, true
}

// stormIn reports whether a storm blows at some time in [a, b).
func (o *oracle) stormIn(a, b time.Duration) bool {
	for _, s := range o.e.sc.Storms {
		if s.Start < b && s.Start+s.Len > a {
			return true
		}
	}
	return false
}

// candidates are the moments from a to horizon at which a key may free
// up: a itself, every window's end, and every outage's, storm's and
// fault's end, in order.
func (o *oracle) candidates(a, horizon time.Duration) []time.Duration {
	sc := o.e.sc
	cands := []time.Duration{a}
	for i := range sc.Creds {
		_, end := o.e.up.windowOf(i, a)
		for s := end; s <= horizon; s += sc.Window {
			cands = append(cands, s)
		}
	}
	for _, sp := range slices.Concat(sc.Outages, sc.Storms, sc.Faults) {
		if end := sp.Start + sp.Len; end > a && end <= horizon {
			cands = append(cands, end)
		}
	}
	slices.Sort(cands)
	return cands
}

// best is the usable key at t whose window ends soonest, the least used
// on a tie, with its window's index; -1 when none is usable.
func (o *oracle) best(t time.Duration, model string) (int, int64) {
	best, bestEnd, bestIdx := -1, time.Duration(0), int64(0)
	for i := range o.e.sc.Creds {
		idx, end, ok := o.usable(i, t, model)
		if !ok {
			continue
		}
		if best < 0 || end < bestEnd || (end == bestEnd && o.used[i] < o.used[best]) {
			best, bestEnd, bestIdx = i, end, idx
		}
	}
	return best, bestIdx
}

// schedule sends r at the earliest moment within patience that a key can
// take it, or fails it.
func (o *oracle) schedule(r *request) {
	e, a := o.e, r.arrive
	for _, t := range o.candidates(a, a+oracleStormPatience) {
		best, idx := o.best(t, r.model)
		if best < 0 {
			continue
		}
		if t-a > oraclePatience && !(t-a <= oracleStormPatience && o.stormIn(a, t)) {
			break
		}
		o.planned[oracleSlot{best, e.sc.bucket(r.model), idx}]++
		o.used[best]++
		e.wait(r, t-a, func() {
			e.attempt(r, best, func(ans answer) {
				if !ans.ok {
					panic(fmt.Sprintf("goodput: oracle's call at %v on %s refused (%d)", e.w.since(), credID(best), ans.resp.Status))
				}
				e.serve(r, nil)
			})
		})
		return
	}
	e.fail(r, "refused: no slot within patience")
}
