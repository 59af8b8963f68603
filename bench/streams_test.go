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
	streamsSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, s)
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
	got := onTheSeries(one, s)
	if got.Met || float64(got.Value) != 400 {
		t.Errorf("judged %v on %v, want missed on +400", got.Met, got.Value)
	}
	if !strings.Contains(got.Measured, "the full run's figure") || !strings.Contains(got.Measured, "median of 3 runs of 12 rounds") {
		t.Errorf("measured %q", got.Measured)
	}
	s.Runs = s.Runs[2:]
	if got := onTheSeries(one, s); !got.Met {
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
