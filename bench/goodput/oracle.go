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
	const patience, stormPatience = 2 * time.Minute, 5 * time.Minute
	sc := e.sc
	type slot struct {
		cred   int
		bucket string
		win    int64
	}
	planned := map[slot]int{}
	used := make([]int, sc.Creds)

	usable := func(i int, t time.Duration, model string) (int64, time.Duration, bool) {
		if at, dead := sc.deadAt(i); dead && t >= at {
			return 0, 0, false
		}
		for _, o := range sc.Outages {
			if o.holds(t) {
				return 0, 0, false
			}
		}
		for _, s := range append(slices.Clone(sc.Storms), sc.Faults...) {
			if s.holds(t) {
				return 0, 0, false
			}
		}
		idx, end := e.up.windowOf(i, t)
		if planned[slot{i, sc.bucket(model), idx}] >= sc.quota(model) {
			return 0, 0, false
		}
		return idx, end, true
	}
	stormIn := func(a, b time.Duration) bool {
		for _, s := range sc.Storms {
			if s.Start < b && s.Start+s.Len > a {
				return true
			}
		}
		return false
	}

	return func(r *request) {
		a := r.arrive
		horizon := a + stormPatience
		cands := []time.Duration{a}
		for i := range sc.Creds {
			_, end := e.up.windowOf(i, a)
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
		for _, t := range cands {
			best, bestEnd, bestIdx := -1, time.Duration(0), int64(0)
			for i := range sc.Creds {
				idx, end, ok := usable(i, t, r.model)
				if !ok {
					continue
				}
				if best < 0 || end < bestEnd || (end == bestEnd && used[i] < used[best]) {
					best, bestEnd, bestIdx = i, end, idx
				}
			}
			if best < 0 {
				continue
			}
			if t-a > patience && !(t-a <= stormPatience && stormIn(a, t)) {
				break
			}
			planned[slot{best, sc.bucket(r.model), bestIdx}]++
			used[best]++
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
}
