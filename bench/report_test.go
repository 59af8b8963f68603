package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run rewrites only what lies between the markers: the findings and the
// method around them are written by hand and stay as they were.
func TestWriteReportKeepsTheProseAroundIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	doc := "# Benchmarks\n\nby hand, above\n\n" + genBegin + "\nold run\n" + genEnd + "\n\n## Findings\n\nby hand, below\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Results{Machine: Machine{Date: "2026-12-08 00:00 UTC"}, Duration: "1s"}
	if err := writeReport(path, r); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	got := string(b)
	for _, want := range []string{"by hand, above", "by hand, below", "Run of 2026-12-08 00:00 UTC", genBegin, genEnd} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "old run") {
		t.Errorf("the last run's part was kept:\n%s", got)
	}
	if err := writeReport(path, r); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != got {
		t.Errorf("a second write changed the file:\n%s", again)
	}
	os.WriteFile(path, []byte("# Benchmarks\n\nno markers\n"), 0o644)
	if err := writeReport(path, r); err == nil || !strings.Contains(err.Error(), "markers") {
		t.Errorf("a file without the markers: %v, want an error that names them", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "# Benchmarks\n\nno markers\n" {
		t.Errorf("a file without the markers was overwritten:\n%s", b)
	}
}

// The 256-stream gap row is measured and printed but judged by no one,
// even in a run whose two bare proxies land close: it is neither met nor
// missed in the count, and the report says why once.
func TestUnresolvedRowIsNotATarget(t *testing.T) {
	o := &Overhead{SSE: map[string]map[string]SSE{"n256": {
		"direct": {Gap99: 20000}, "bare": {Gap99: 22000}, "bare2": {Gap99: 22030}, "subpool": {Gap99: 22300},
	}}, Memory: map[string]Mem{}}
	r := &Results{Overhead: o}
	r.Targets = judge(r)
	var gap Target
	for _, tg := range r.Targets {
		if tg.ID == "sse-gap-n256" {
			gap = tg
		}
	}
	if gap.Unresolved == "" || !strings.Contains(gap.Measured, "a second bare proxy +30 µs") {
		t.Fatalf("the 256-stream gap row: %+v, want it unresolved with the second bare proxy beside it", gap)
	}
	md := report(r)
	if n := strings.Count(md, "not judged: "+gap.Unresolved); n != 1 {
		t.Errorf("the reason is printed %d times, want once:\n%s", n, md)
	}
	if !strings.Contains(md, "; 1 not judged") || strings.Contains(md, "`sse-gap-n256`") {
		t.Errorf("the row is counted or listed as a miss:\n%s", md)
	}
}

// A streaming row is judged against the bare proxy only when the second
// bare proxy of the same waves landed within the bound of the first: past
// it, the run cannot tell the bound from the noise, and says so.
func TestStreamRowsAreJudgedAgainstTheNoiseFloor(t *testing.T) {
	for _, c := range []struct {
		bare2      num
		unresolved bool
	}{{21020, false}, {20980, false}, {21724, true}, {20300, true}} {
		o := &Overhead{SSE: map[string]map[string]SSE{"n64": {
			"direct": {Gap99: 20000}, "bare": {Gap99: 21000}, "bare2": {Gap99: c.bare2}, "subpool": {Gap99: 21300},
		}}, Memory: map[string]Mem{}}
		for _, tg := range judgeSSE(o) {
			if tg.ID != "sse-gap-n64" {
				continue
			}
			if got := tg.Unresolved != ""; got != c.unresolved {
				t.Errorf("bare2 at %v µs against bare's 21000: unresolved %q, want %v", float64(c.bare2), tg.Unresolved, c.unresolved)
			}
		}
	}
	// Without a second bare proxy there is no floor to read: judged.
	o := &Overhead{SSE: map[string]map[string]SSE{"n64": {"bare": {Gap99: 21000}, "subpool": {Gap99: 21300}}}, Memory: map[string]Mem{}}
	for _, tg := range judgeSSE(o) {
		if tg.Unresolved != "" {
			t.Errorf("%s without bare2: unresolved %q", tg.ID, tg.Unresolved)
		}
	}
}
