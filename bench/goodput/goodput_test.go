package goodput

import (
	"reflect"
	"testing"
	"time"
)

// small is a scenario that runs in milliseconds: 4 keys, one-minute
// windows, 1.5× their quota, with a revoked key, a pool-wide outage and a
// capacity storm and ten seconds of server errors on top, so every branch
// of every strategy runs.
func small(announce bool) *Scenario {
	sc := &Scenario{Name: "small", Creds: 4, Window: time.Minute, Announce: announce,
		Models:   []Model{{Name: "claude-sonnet-4-5", Quota: 5, Load: 1.5}},
		Duration: 20 * time.Minute,
		Deaths:   []Death{{Cred: 2, At: 12 * time.Minute}},
		Outages:  []Span{{Start: 5 * time.Minute, Len: 30 * time.Second}},
		Storms:   []Span{{Start: 9 * time.Minute, Len: 20 * time.Second}},
		Faults:   []Span{{Start: 7 * time.Minute, Len: 10 * time.Second}},
		Seed:     42}
	sc.defaults()
	return sc
}

// The harness's own bookkeeping: every request ends once, the counts add
// up, and no strategy serves more than the oracle, which never sends a
// call that is refused.
func TestInvariants(t *testing.T) {
	for _, announce := range []bool{true, false} {
		sc := small(announce)
		results := map[string]Result{}
		for _, st := range Strategies() {
			r := Run(sc, st)
			results[st.Name] = r
			if r.Requests == 0 {
				t.Fatalf("%s: no requests", st.Name)
			}
			n := 0
			for _, c := range r.Outcomes {
				n += c
			}
			if n != r.Requests || r.Outcomes["served"] != r.Served {
				t.Errorf("%s: outcomes %v do not add up to %d requests, %d served", st.Name, r.Outcomes, r.Requests, r.Served)
			}
			ok := r.Calls - r.Refused429 - r.Refused529 - r.Refused401 - r.Refused500
			if ok != r.Served {
				t.Errorf("%s: %d successful calls for %d served requests", st.Name, ok, r.Served)
			}
			if r.Wasted > r.Refused429 {
				t.Errorf("%s: %d wasted calls but only %d refusals", st.Name, r.Wasted, r.Refused429)
			}
		}
		o := results["oracle"]
		if o.Calls != o.Served || o.Wasted != 0 {
			t.Errorf("oracle made %d calls for %d served, %d wasted", o.Calls, o.Served, o.Wasted)
		}
		for name, r := range results {
			if r.Goodput > o.Goodput {
				t.Errorf("announce=%v: %s served %.3f, more than the oracle's %.3f", announce, name, r.Goodput, o.Goodput)
			}
		}
		if s := results["subpool"]; announce && s.Wasted != 0 {
			t.Errorf("subpool sent %d calls into announced cooldowns", s.Wasted)
		}
	}
}

// A run depends on its seed only.
func TestDeterministic(t *testing.T) {
	for _, st := range Strategies() {
		a, b := Run(small(true), st), Run(small(true), st)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs differ:\n%+v\n%+v", st.Name, a, b)
		}
	}
}

// Arrivals follow the offered load: 1.5 × 4 keys × 5 per minute.
func TestArrivalRate(t *testing.T) {
	sc := small(true)
	sc.Duration = 10 * time.Hour
	got := float64(len(sc.arrivals())) / sc.Duration.Minutes()
	if got < 28 || got > 32 {
		t.Errorf("%.1f arrivals per minute, want about 30", got)
	}
}

// Issue 27: in every scenario, subpool serves at least 0.98 of what the
// oracle serves with at most 10 % of its upstream attempts refused 429,
// in the runs `make bench` makes and judges. Bare 429s (steady-silent,
// the outage) are what pacing is for.
func TestScenariosMeetIssue27(t *testing.T) {
	if testing.Short() {
		t.Skip("the full scenarios take seconds")
	}
	for _, r := range RunAll(Scenarios(1)) {
		if r.Strategy != "subpool" {
			continue
		}
		if r.VsOracle < MinVsOracle {
			t.Errorf("%s: goodput %.3f of the oracle, want ≥ %.2f", r.Scenario, r.VsOracle, MinVsOracle)
		}
		if r.Share429() > Max429Share {
			t.Errorf("%s: %d of %d attempts refused 429 (%.1f %%), want ≤ %.0f %%", r.Scenario, r.Refused429, r.Calls, 100*r.Share429(), 100*Max429Share)
		}
		t.Logf("%-18s %.3f of the oracle, %4.1f %% 429s", r.Scenario, r.VsOracle, 100*r.Share429())
	}
}
