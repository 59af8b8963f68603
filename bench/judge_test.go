package main

import "testing"

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
