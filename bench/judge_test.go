package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/bench/goodput"
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
// A voided round counts nowhere. SSE time to first token is pooled the
// same way, and lost frames are judged on the worst run.
func TestRepeatsJudgedOnPooledRounds(t *testing.T) {
	run := func(bare, sub float64, voided bool, ttft []float64, lost int) *Overhead {
		o := &Overhead{Added: map[string]Added{}, SSE: map[string]map[string]SSE{"n1": {}}, SSEAdded: map[string]SSEAdded{}}
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
		for arm, vs := range map[string][]float64{"direct": {1000, 1000, 1000}, "bare": {1100, 1100, 1100}, "subpool": ttft} {
			s := SSE{TTFT50: num(median(vs)), Gap99: 20000, Frames: 70, Expected: 70}
			if arm == "subpool" {
				s.Frames -= lost
			}
			for _, v := range vs {
				s.TTFT50Rounds, s.Gap99Rounds = append(s.TTFT50Rounds, num(v)), append(s.Gap99Rounds, 20000)
			}
			o.SSE["n1"][arm] = s
		}
		o.SSEAdded["n1"] = SSEAdded{TTFTBare: 100, TTFTSub: num(median(ttft) - 1000)}
		return o
	}
	// TTFT over bare by run: +300, +300, 0 µs (median +300, missed);
	// pooled, five of the nine rounds are at bare's 1100: +0, met.
	slow, fast := []float64{1100, 1400, 1400}, []float64{1100, 1100, 1100}
	runs := []*Overhead{run(13, 13, true, slow, 0), run(12, 15, false, slow, 2), run(13, 16, false, fast, 0)}
	po, jr, sr := pooledOverhead(runs)
	if jr != 9 || sr != 9 {
		t.Errorf("pooled %d JSON and %d SSE rounds, want 9 and 9 (the voided one left out)", jr, sr)
	}
	if got := float64(po.Added["c32"].Ratio99); math.Abs(got-5.0/3) > 1e-9 {
		t.Errorf("pooled p99 ratio %v, want 1.67 (subpool 15 − 10 over bare 13 − 10)", got)
	}
	got := map[string]Target{}
	for _, tg := range judge(&Results{Overhead: runs[0], Repeats: runs[1:]}) {
		got[tg.ID] = tg
	}
	if tg := got["added-p99-c32"]; math.Abs(float64(tg.Value)-5.0/3) > 1e-9 || tg.Met || len(tg.Runs) != 3 ||
		float64(tg.Runs[1]) != 2.5 || !strings.Contains(tg.Measured, ", 9 rounds of 3 runs pooled") {
		t.Errorf("added p99 c32 judged %+v, want the pooled 1.67× (missed), each run's ratio kept", tg)
	}
	if tg := got["sse-ttft-n1"]; float64(tg.Value) != 0 || !tg.Met || float64(tg.Runs[0]) != 300 {
		t.Errorf("TTFT judged %+v, want the pooled +0 µs, met, run 1's +300 kept", tg)
	}
	if tg := got["sse-frames-n1"]; float64(tg.Value) != 2 || tg.Met || !strings.HasPrefix(tg.Measured, "68 of 70 frames") {
		t.Errorf("frames judged %+v, want the worst run's 2 lost frames, missed", tg)
	}
}

// Every goodput scenario is judged on issue 27's two figures: a scenario
// served below 0.98 of the oracle, or with more than 10 % of its attempts
// refused 429 (5 % for the steady ones, §6), misses; the others are met.
func TestGoodputJudgedInEveryScenario(t *testing.T) {
	var gs []goodput.Result
	for _, sc := range goodput.Scenarios(1) {
		r := goodput.Result{Scenario: sc.Name, Strategy: "subpool", Goodput: 0.99, VsOracle: 0.99, Calls: 1000, Refused429: 40, Balance: 1}
		switch sc.Name {
		case "capacity-storms":
			r.VsOracle = 0.979
		case "outage":
			r.Refused429 = 101
		case "steady-silent":
			r.Refused429 = 51
		}
		gs = append(gs, r, goodput.Result{Scenario: sc.Name, Strategy: "oracle", Goodput: 1})
	}
	missed := map[string]bool{}
	n := map[string]int{}
	for _, tg := range judgeGoodput(gs) {
		for _, p := range []string{"goodput-", "429-share-"} {
			if strings.HasPrefix(tg.ID, p) {
				n[p]++
			}
		}
		if !tg.Met {
			missed[tg.ID] = true
		}
	}
	for _, p := range []string{"goodput-", "429-share-"} {
		if n[p] != len(goodput.Scenarios(1)) {
			t.Errorf("%d %s targets, want one per scenario (%d)", n[p], p, len(goodput.Scenarios(1)))
		}
	}
	want := map[string]bool{"goodput-capacity-storms": true, "429-share-outage": true, "429-share-steady-silent": true}
	for id := range missed {
		if !want[id] {
			t.Errorf("%s missed, want met", id)
		}
	}
	for id := range want {
		if !missed[id] {
			t.Errorf("%s met, want missed", id)
		}
	}
}

// A stream's gaps are parted at its start: the stalls among its first
// startGaps gaps are told apart, and only the gaps after them go into the
// "after the start" p99, pooled over every run's rounds like the gap p99.
func TestGapsAfterTheStart(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	after, stalls, atStart := splitGaps(ms(45, 20, 60, 20, 41, 20))
	if !slices.Equal(after, ms(20, 41, 20)) || stalls != 3 || atStart != 2 {
		t.Errorf("split: after %v, %d stalls, %d at the start; want [20 41 20] ms, 3, 2", after, stalls, atStart)
	}
	if after, stalls, atStart := splitGaps(ms(50)); len(after) != 0 || stalls != 1 || atStart != 1 {
		t.Errorf("a one-gap stream: after %v, %d stalls, %d at the start; want none after, 1, 1", after, stalls, atStart)
	}

	run := func(bare, sub []float64, subStart int) *Overhead {
		o := &Overhead{SSE: map[string]map[string]SSE{"n256": {}}}
		for arm, vs := range map[string][]float64{"direct": {20000, 20000}, "bare": bare, "bare2": bare, "subpool": sub} {
			s := SSE{StartStalls: 1, Stalls: 2}
			if arm == "subpool" {
				s.StartStalls, s.Stalls = subStart, subStart+1
			}
			for _, v := range vs {
				s.TTFT50Rounds, s.Gap99Rounds = append(s.TTFT50Rounds, 1000), append(s.Gap99Rounds, num(v+3000))
				s.Gap99SteadyRounds = append(s.Gap99SteadyRounds, num(v))
			}
			s.Gap99Steady = num(median(vs))
			o.SSE["n256"][arm] = s
		}
		return o
	}
	// Subpool after the start by round: 26000, 26000 | 24000, 24000 |
	// 24000, 24000: pooled 24000 against bare's 24100, not the first run's
	// 26000.
	runs := []*Overhead{run([]float64{24100, 24100}, []float64{26000, 26000}, 9),
		run([]float64{24100, 24100}, []float64{24000, 24000}, 3), run([]float64{24100, 24100}, []float64{24000, 24000}, 3)}
	po, _, _ := pooledOverhead(runs)
	if got := float64(po.SSE["n256"]["subpool"].Gap99Steady); got != 24000 {
		t.Errorf("pooled p99 after the start %v µs, want 24000", got)
	}
}
