package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// recorded reads the last full run's results, which every finding has the
// numbers for, and judges them anew as `-from` does.
func recorded(t *testing.T) *Results {
	t.Helper()
	r, err := readResults("results.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.Overhead == nil || r.ServeRSS == nil || len(r.Goodput) == 0 || len(r.Micro) == 0 {
		t.Skip("results.json is from a partial run; a full `make bench` writes one every finding can use")
	}
	r.Targets = judge(&r)
	return &r
}

// Every finding must have a title, ids that name targets the bench judges,
// and text for a run that has all the numbers; the report then prints each
// of them when all targets miss. A finding whose text came out empty or
// with a broken verb would otherwise pass unseen until its target missed.
func TestFindingsHaveText(t *testing.T) {
	r := recorded(t)
	for i := range r.Targets {
		r.Targets[i].Met = false
	}
	md := report(r)
	for _, f := range findings {
		if f.title == "" || len(f.ids) == 0 {
			t.Errorf("finding %q: a title and target ids are needed", f.title)
		}
		for _, id := range f.ids {
			if !judged(r, id) {
				t.Errorf("finding %q: no judged target starts with %q", f.title, id)
			}
		}
		text := checkText(t, f, r)
		if !strings.Contains(md, "### "+f.title+"\n") || !strings.Contains(md, text) {
			t.Errorf("finding %q: not in the report when all targets miss", f.title)
		}
	}
}

// Each observation must have text for a run in which it applies: the
// targets it stands in for are met and the bare proxy broke streams.
func TestObservationsHaveText(t *testing.T) {
	r := recorded(t)
	for i := range r.Targets {
		r.Targets[i].Met = true
	}
	r.ServeRSS.Total = 10 << 20
	for k, x := range r.Overhead.SSE {
		b := x["bare"]
		b.Errors, b.FirstErr = 1, "unexpected EOF"
		x["bare"] = b
		r.Overhead.SSE[k] = x
	}
	for _, f := range observations {
		if f.title == "" {
			t.Error("an observation has no title")
		}
		checkText(t, f, r)
	}
}

func checkText(t *testing.T, f finding, r *Results) string {
	t.Helper()
	text := strings.TrimSpace(f.text(r))
	if text == "" {
		t.Errorf("%q: no text", f.title)
	}
	if strings.Contains(text, "%!") {
		t.Errorf("%q: a format verb does not match its value: %s", f.title, text)
	}
	return text
}

func judged(r *Results, prefix string) bool {
	for _, t := range r.Targets {
		if strings.HasPrefix(t.ID, prefix) {
			return true
		}
	}
	return false
}

// The collector's price is read from the sweep, not written into the
// text, so it moves with each new sweep and goes when there is none.
func TestGCPriceFromTheSweep(t *testing.T) {
	r := &Results{GCSweep: &GCSweep{Rows: []GCRow{
		{Setting: GCSetting{}, CPU: 300, GCCPU: 50, RSSRatio: 1.4, Chosen: true},
		{Setting: GCSetting{GOGC: "200", MemLimit: "off"}, CPU: 270, GCCPU: 20, RSSRatio: 1.7},
	}}}
	text := gcPrice(r)
	for _, want := range []string{"about 20 µs a request and RSS was 1.70× bare", "about 50 µs and 1.40×", "the 30 µs is about 10 % of a request's CPU"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q: %s", want, text)
		}
	}
	if text := gcPrice(&Results{}); text != "" {
		t.Errorf("no sweep, got %q", text)
	}
}

// The report points readers at the code behind each finding; a file that
// was split or renamed since would send them nowhere.
func TestReportNamesFilesThatExist(t *testing.T) {
	r := recorded(t)
	for i := range r.Targets {
		r.Targets[i].Met = false
	}
	md := report(r)
	named := regexp.MustCompile(`\b(?:proxy|daemon|internal|app|bench)/[a-z0-9_/]+\.go\b`).FindAllString(md, -1)
	if len(named) == 0 {
		t.Fatal("the report names no source file; the pattern is out of date")
	}
	for _, f := range named {
		if _, err := os.Stat(filepath.Join("..", f)); err != nil {
			t.Errorf("the report names %s, which does not exist", f)
		}
	}
}
