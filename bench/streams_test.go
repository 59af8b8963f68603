package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func streamRunOf(direct, bare, bare2, subpool float64, stalls int) StreamRun {
	r := StreamRun{Gap99: map[string]num{}, Steady: map[string]num{}, Stalls: map[string]int{}, StartSt: map[string]int{}}
	for arm, v := range map[string]float64{"direct": direct, "bare": bare, "bare2": bare2, "subpool": subpool} {
		r.Gap99[arm], r.Steady[arm] = num(v), num(v)
	}
	r.Stalls["subpool"], r.StartSt["subpool"] = stalls, stalls
	return r
}

// The series is judged run by run against the same run's bare proxies,
// and its figure is the median over the runs: one noisy run moves it
// little.
func TestStreamSeriesMedians(t *testing.T) {
	s := &StreamSeries{Date: "2026-12-03 12:00 UTC", Rounds: 12, Runs: []StreamRun{
		streamRunOf(22000, 23000, 23200, 23100, 1),  // +100 over bare, 0 over the mean
		streamRunOf(22000, 23000, 22800, 22850, 0),  // -150, -50
		streamRunOf(22000, 23000, 23000, 26000, 40), // +3000, +3000: a burst elsewhere
		streamRunOf(22000, 24000, 23000, 23400, 2),  // -600, -100
		streamRunOf(22000, 23000, 23400, 23260, 0),  // +260, +60
	}}
	if got, want := median(s.overBares()), 0.0; got != want {
		t.Errorf("median over the bares' mean %v, want %v (%v)", got, want, s.overBares())
	}
	if got, want := median(s.overBare()), 100.0; got != want {
		t.Errorf("median over bare %v, want %v", got, want)
	}
	if got, want := median(s.bare2OverBare()), 0.0; got != want {
		t.Errorf("bare2 over bare %v, want %v (%v)", got, want, s.bare2OverBare())
	}
	for i, cpu := range []num{20, 12, 14, 18, 16} {
		s.Runs[i].GCCycles = map[string]num{"bare": 0.5, "bare2": 0.75, "subpool": 1}
		s.Runs[i].GCCPU = map[string]num{"bare": 8, "bare2": 10, "subpool": cpu}
	}
	if got, want := median(s.gcOverBares()), 7.0; got != want {
		t.Errorf("collector CPU over the bares' mean %v, want %v (%v)", got, want, s.gcOverBares())
	}
	if all, start := s.stalls("subpool"); all != 43 || start != 43 {
		t.Errorf("stalls %d (%d at the start), want 43", all, start)
	}
	var b strings.Builder
	streamsSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, s, nil)
	out := b.String()
	for _, want := range []string{
		"| **median** | | | | | **+100 µs** | **+0 µs** | **+0 µs** |",
		"within the bares' mean + 50 µs in 3 of 5 runs",
		"subpool 43 (43), 0 broken.",
		"| 0.50 (8 ms) / 0.75 (10 ms) / 1.00 (20 ms) |",
		"| subpool +7 ms over the bares' mean |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the section lacks %q:\n%s", want, out)
		}
	}
}

// A full run that does not measure the series carries the last one over
// and says so; measuring it again takes it off the note.
func TestStreamSeriesCarried(t *testing.T) {
	old := Results{Streams: &StreamSeries{Date: "2026-12-03 12:00 UTC", Runs: []StreamRun{streamRunOf(1, 2, 3, 4, 0)}}}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := writeResults(path, &old); err != nil {
		t.Fatal(err)
	}
	var res Results
	if err := carryOver(&res, path, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Streams, old.Streams) {
		t.Fatalf("series not carried: %+v", res.Streams)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], streamsCarried(old.Streams)) {
		t.Fatalf("notes %q", res.Notes)
	}
	if got := dropCarried(res.Notes, streamsCarried(old.Streams)); len(got) != 0 {
		t.Fatalf("measured again, still carried: %q", got)
	}
}

// With a series, the 256-stream gap is judged on it, not on one run's
// figure, and the run's figure stays in the text.
func TestGapJudgedOnTheSeries(t *testing.T) {
	one := Target{ID: "sse-gap-n256", Goal: "≤ bare + 50 µs", Measured: "the full run's figure", Value: -1440, Limit: 50, Met: true}
	s := &StreamSeries{Rounds: 12, Runs: []StreamRun{
		streamRunOf(22000, 23000, 23000, 23400, 0),
		streamRunOf(22000, 23000, 23200, 23500, 0),
		streamRunOf(22000, 23000, 22800, 22900, 0),
	}}
	got := onTheSeries(one, s, 1)
	if got.Met || float64(got.Value) != 400 {
		t.Errorf("judged %v on %v, want missed on +400", got.Met, got.Value)
	}
	if !strings.Contains(got.Measured, "the full run's figure") || !strings.Contains(got.Measured, "median of 3 runs of 12 rounds") {
		t.Errorf("measured %q", got.Measured)
	}
	s.Runs = s.Runs[2:]
	if got := onTheSeries(one, s, 1); !got.Met {
		t.Errorf("+0 over the bares' mean judged missed: %+v", got)
	}
}

// The findings tell the series' verdict and, with the CPU counts, the work
// and the collector's share of it.
func TestSeriesSays(t *testing.T) {
	r := &Results{Streams: &StreamSeries{Rounds: 12, Runs: []StreamRun{
		streamRunOf(22000, 23000, 23000, 23400, 0),
		streamRunOf(22000, 23000, 23200, 23500, 0),
		streamRunOf(22000, 23000, 22800, 22900, 0),
	}}}
	for i := range r.Streams.Runs {
		r.Streams.Runs[i].CPU = map[string]num{"bare": 500, "bare2": 510, "subpool": 540}
		r.Streams.Runs[i].GCCPU = map[string]num{"bare": 9, "bare2": 11, "subpool": 16}
	}
	got := seriesSays(r)
	for _, want := range []string{"a median +400 µs over the mean", "is not shown", "+35 ms of CPU per wave", "+6 ms\nof it in its collector"} {
		if !strings.Contains(got, want) {
			t.Errorf("findings lack %q:\n%s", want, got)
		}
	}
}

// A stream that ended cleanly but short is broken, as one cut off is: a
// proxy that ends a failed stream with an in-band error event must not be
// counted as having broken none.
func TestShortStreamIsBroken(t *testing.T) {
	cut := errors.New("unexpected EOF")
	for _, c := range []struct {
		r    streamResult
		want string
	}{
		{streamResult{frames: 70}, ""},
		{streamResult{frames: 71}, ""},
		{streamResult{frames: 40}, "the stream ended after 40 of 70 frames"},
		{streamResult{frames: 40, err: cut}, "unexpected EOF"},
	} {
		got := ""
		if err := c.r.broken(70); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%d frames, err %v: broken %q, want %q", c.r.frames, c.r.err, got, c.want)
		}
	}
}

// The gap is judged on the runs of every series on the latest one's code:
// a series of other code, or of none named, is left out, and a latest
// series of no named code stands alone.
func TestSeriesOnTheSameCodeArePooled(t *testing.T) {
	runs := func(over ...float64) []StreamRun {
		var rs []StreamRun
		for _, d := range over {
			rs = append(rs, streamRunOf(22000, 23000, 23000, 23000+d, 0))
		}
		return rs
	}
	latest := &StreamSeries{Date: "latest", Code: "aaa", Rounds: 12, Runs: runs(100, 120, 140)}
	earlier := []*StreamSeries{
		{Date: "same", Code: "aaa", Rounds: 12, Runs: runs(0, 10, 20, 30, 40)},
		{Date: "other", Code: "bbb", Rounds: 12, Runs: runs(900, 900, 900)},
		{Date: "unnamed", Rounds: 12, Runs: runs(900)},
		nil,
		{Date: "same again", Code: "aaa", Rounds: 12, Runs: runs(-10, -20)},
	}
	pooled, series := pooledSeries(latest, earlier)
	if series != 3 || len(pooled.Runs) != 10 {
		t.Fatalf("pooled %d runs of %d series, want 10 of 3", len(pooled.Runs), series)
	}
	if len(latest.Runs) != 3 {
		t.Fatalf("pooling changed the latest series: %d runs", len(latest.Runs))
	}
	// 100 120 140 0 10 20 30 40 -10 -20: the median is 25.
	one := Target{ID: "sse-gap-n256", Goal: "≤ bare + 50 µs", Measured: "the full run's figure", Limit: 50}
	got := onTheSeries(one, pooled, series)
	if !got.Met || float64(got.Value) != 25 {
		t.Errorf("judged %v on %v, want met on +25", got.Met, got.Value)
	}
	// 10 runs: the interval is the 2nd smallest to the 2nd largest.
	for _, want := range []string{"+25 µs over the two bare proxies' mean [95 % interval -10 to +120]", "median of 10 runs of 12 rounds on fresh processes in 3 series on the same code"} {
		if !strings.Contains(got.Measured, want) {
			t.Errorf("measured %q lacks %q", got.Measured, want)
		}
	}
	var b strings.Builder
	streamsSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, latest, earlier)
	out := b.String()
	for _, want := range []string{"fingerprint `aaa`", "| latest | 3 | +120 µs | +0 µs |", "| same | 5 | +20 µs | +0 µs |",
		"| same again | 2 |", "| **all 3 series** | **10** | **+25 µs** [95 % interval -10 to +120] |"} {
		if !strings.Contains(out, want) {
			t.Errorf("the section lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"| other |", "| unnamed |"} {
		if strings.Contains(out, not) {
			t.Errorf("the section has %q, of other code:\n%s", not, out)
		}
	}
	alone := *latest
	alone.Code = ""
	if p, n := pooledSeries(&alone, earlier); n != 1 || len(p.Runs) != 3 {
		t.Errorf("a series of no named code pooled %d runs of %d series", len(p.Runs), n)
	}
}

// A new series pushes the last one to the earlier ones, newest first and
// at most keptSeries; a full run carries both over.
func TestNewSeriesKeepsTheEarlierOnes(t *testing.T) {
	dir := t.TempDir()
	jsonPath, mdPath := filepath.Join(dir, "results.json"), filepath.Join(dir, "benchmarks.md")
	put := func(date string) {
		t.Helper()
		s := &StreamSeries{Date: date, Code: "aaa", Rounds: 12, Runs: []StreamRun{streamRunOf(1, 2, 3, 4, 0)}}
		if err := keepInResults(jsonPath, mdPath, func(res *Results) { keepSeries(res, s) }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range keptSeries + 3 {
		put(fmt.Sprintf("s%02d", i))
	}
	res, err := readResults(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	last := keptSeries + 2
	if res.Streams.Date != fmt.Sprintf("s%02d", last) || len(res.StreamsEarlier) != keptSeries || res.StreamsEarlier[0].Date != fmt.Sprintf("s%02d", last-1) {
		t.Fatalf("latest %s, %d earlier starting %s", res.Streams.Date, len(res.StreamsEarlier), res.StreamsEarlier[0].Date)
	}
	var full Results
	if err := carryOver(&full, jsonPath, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	if full.Streams.Date != res.Streams.Date || len(full.StreamsEarlier) != keptSeries {
		t.Errorf("a full run carried %v and %d earlier series", full.Streams.Date, len(full.StreamsEarlier))
	}
}

// A run in which the direct arm stalled is shown but not judged: the
// machine set its gaps. The rule reads no proxy's figure.
func TestDisturbedRunsAreNotJudged(t *testing.T) {
	calm := streamRunOf(22000, 23000, 23000, 23100, 0)
	busy := streamRunOf(30000, 33000, 29000, 28000, 0) // subpool -3000 over the bares' mean
	busy.Stalls["direct"] = 500
	latest := &StreamSeries{Date: "today", Code: "aaa", Rounds: 12, Runs: []StreamRun{busy, calm, busy}}
	earlier := []*StreamSeries{{Date: "before", Code: "aaa", Rounds: 12, Runs: []StreamRun{calm, calm}}}
	pooled, series := pooledSeries(latest, earlier)
	if series != 2 || len(pooled.Runs) != 3 {
		t.Fatalf("pooled %d runs of %d series, want the 3 calm ones of 2", len(pooled.Runs), series)
	}
	one := Target{ID: "sse-gap-n256", Goal: "≤ bare + 50 µs", Measured: "the full run's figure", Limit: 50}
	if got := onTheSeries(one, pooled, series); got.Met || float64(got.Value) != 100 {
		t.Errorf("judged %v on %v, want missed on +100 (the busy runs' -3000 left out)", got.Met, got.Value)
	}
	var b strings.Builder
	streamsSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, latest, earlier)
	for _, want := range []string{"| 1 (direct stalled 500×: not judged) |", "| today | 3, 1 judged | +100 µs |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the section lacks %q:\n%s", want, b.String())
		}
	}
	allBusy := &StreamSeries{Date: "today", Rounds: 12, Runs: []StreamRun{busy}}
	p, n := pooledSeries(allBusy, nil)
	if got := onTheSeries(one, p, n); got.Met || !strings.Contains(got.Measured, "no run") {
		t.Errorf("a series of disturbed runs only judged %+v", got)
	}
	if got := seriesSays(&Results{Streams: allBusy}); !strings.Contains(got, "judges nothing") {
		t.Errorf("findings %q", got)
	}
}

// A pass on the median whose interval still holds the bound is said to be
// unresolved; a pass below the bound and a miss (told by its finding) are
// not.
func TestGapUnresolvedOnlyWhenTheIntervalHoldsTheBound(t *testing.T) {
	series := func(over ...float64) *Results {
		s := &StreamSeries{Rounds: 12}
		for _, d := range over {
			s.Runs = append(s.Runs, streamRunOf(22000, 23000, 23000, 23000+d, 0))
		}
		return &Results{Streams: s}
	}
	if got := gapUnresolved(series(-300, -200, -100, 0, 30, 40, 90, 200, 300)); !strings.Contains(got, "within issue 27's bound") ||
		!strings.Contains(got, "not the chunks in between") {
		t.Errorf("a median of +30 with an interval past +50: %q", got)
	}
	for name, r := range map[string]*Results{
		"resolved":  series(-40, -30, -20, -10, 0, 10, 20, 30, 40),
		"missed":    series(-100, 0, 60, 70, 80, 90, 100, 200, 300),
		"too few":   series(0, 100),
		"no series": {},
	} {
		if got := gapUnresolved(r); got != "" {
			t.Errorf("%s: %q", name, got)
		}
	}
}
