package main

import (
	"math"
	"strings"
	"testing"
)

// Repeated runs are judged on the median value, described by the run
// nearest it, with every run's value kept; a target only one run has
// (throughput) stays judged on that run.
func TestAggregateJudgesTheMedian(t *testing.T) {
	run := func(v float64, tput bool) []Target {
		ts := []Target{{ID: "cpu", Measured: formatFloat(v), Value: num(v), Limit: 1.1}}
		if tput {
			ts = append(ts, Target{ID: "throughput", Value: 0.7, Limit: 0.8, AtLeast: true})
		}
		return ts
	}
	got := aggregate([][]Target{run(1.3, true), run(1.0, false), run(1.05, false)})
	if len(got) != 2 {
		t.Fatalf("got %d targets: %+v", len(got), got)
	}
	c := got[0]
	if float64(c.Value) != 1.05 || !c.Met || c.Measured != "1.05" || len(c.Runs) != 3 || float64(c.Runs[0]) != 1.3 {
		t.Errorf("cpu = %+v, want median 1.05 met, described by run 3, three runs", c)
	}
	if tp := got[1]; tp.Met || len(tp.Runs) != 1 {
		t.Errorf("throughput = %+v, want missed on its one run", tp)
	}
}

// With repeated runs the added latency is judged on every kept round of
// every run pooled, not on the median of the runs' ratios: here the runs
// give 1.0×, 2.5× and 2.0× (median 2.0×), and the nine rounds 1.67×.
// A voided round counts nowhere.
func TestLatencyJudgedOnPooledRounds(t *testing.T) {
	run := func(bare, sub float64, voided bool) *Overhead {
		o := &Overhead{Added: map[string]Added{}}
		for r := 1; r <= 3; r++ {
			for arm, p99 := range map[string]float64{"direct": 10, "bare": bare, "subpool": sub} {
				for _, c := range []string{"c1", "c32"} {
					o.JSONRounds = append(o.JSONRounds, RoundValue{Round: r, Case: c, Arm: arm, P50: num(p99 / 2), P99: num(p99)})
				}
			}
		}
		if voided {
			for arm, p99 := range map[string]float64{"direct": 10, "bare": 11, "subpool": 90} {
				o.JSONRounds = append(o.JSONRounds, RoundValue{Round: 4, Case: "c32", Arm: arm, P50: num(p99 / 2), P99: num(p99)})
			}
			o.Voided = []int{4}
		}
		m := map[string][2]float64{"direct": {5, 10}, "bare": {bare / 2, bare}, "subpool": {sub / 2, sub}}
		o.Added["c1"], o.Added["c32"] = addedOf(m), addedOf(m)
		return o
	}
	runs := []*Overhead{run(13, 13, true), run(12, 15, false), run(13, 16, false)}
	pooled, rounds := pooledAdded(runs)
	if rounds != 9 {
		t.Errorf("pooled %d rounds, want 9 (the voided one left out)", rounds)
	}
	if got := float64(pooled["added-p99-c32"].Value); math.Abs(got-5.0/3) > 1e-9 {
		t.Errorf("pooled p99 ratio %v, want 1.67 (subpool 15 − 10 over bare 13 − 10)", got)
	}
	ts := judge(&Results{Overhead: runs[0], Repeats: runs[1:]})
	for _, tg := range ts {
		if tg.ID != "added-p99-c32" {
			continue
		}
		if math.Abs(float64(tg.Value)-5.0/3) > 1e-9 || tg.Met || len(tg.Runs) != 3 || float64(tg.Runs[1]) != 2.5 ||
			!strings.Contains(tg.Measured, "9 rounds of 3 runs pooled") {
			t.Errorf("judged %+v, want the pooled 1.67× (missed), each run's ratio kept", tg)
		}
		return
	}
	t.Fatal("no added-p99-c32 target")
}
