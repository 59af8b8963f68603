package main

import (
	"reflect"
	"testing"
)

func TestParseGCSettings(t *testing.T) {
	got, err := parseGCSettings("default, 100,400/64MiB,off/20MiB")
	want := []GCSetting{{}, {GOGC: "100", MemLimit: "off"}, {GOGC: "400", MemLimit: "64MiB"}, {GOGC: "off", MemLimit: "20MiB"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", ",", "/64MiB", "100/"} {
		if _, err := parseGCSettings(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if e := (GCSetting{GOGC: "200", MemLimit: "off"}).env(); !reflect.DeepEqual(e, []string{"GOGC=200", "GOMEMLIMIT=off"}) {
		t.Errorf("env %v", e)
	}
	if e := (GCSetting{}).env(); e != nil {
		t.Errorf("serve's own setting sets %v", e)
	}
}

// The setting chosen holds RSS within the goal at the least collector
// CPU; when none does, none is chosen.
func TestChooseGC(t *testing.T) {
	sw := &GCSweep{RSSGoal: gcRSSGoal, Rows: []GCRow{
		{Setting: GCSetting{GOGC: "400"}, GCCPU: 7, RSSRatio: 2.8},
		{Setting: GCSetting{GOGC: "100"}, GCCPU: 38, RSSRatio: 1.4},
		{Setting: GCSetting{GOGC: "150"}, GCCPU: 23, RSSRatio: 1.5},
		{Setting: GCSetting{GOGC: "50"}, GCCPU: 60, RSSRatio: 1.2},
	}}
	sw.chooseGC()
	for i, r := range sw.Rows {
		if r.Chosen != (i == 2) {
			t.Errorf("%s chosen %v", r.Setting, r.Chosen)
		}
	}
	sw.Rows = sw.Rows[:1]
	sw.chooseGC()
	if sw.Rows[0].Chosen {
		t.Error("a setting over the goal was chosen")
	}
}

// A sweep measured into results that carried the last one takes it off
// the carried-over note, and leaves the rest of the note and other notes.
func TestNewSweepIsNoLongerCarried(t *testing.T) {
	old := &GCSweep{Date: "2026-12-02 07:06 UTC"}
	notes := []string{"an earlier note", carriedPrefix + "bench/results.json" + carriedMid + "micro, " + sweepCarried(old) + "."}
	got := dropCarried(notes, sweepCarried(old))
	want := []string{"an earlier note", carriedPrefix + "bench/results.json" + carriedMid + "micro."}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := dropCarried(want[1:], "micro"); len(got) != 0 {
		t.Fatalf("nothing left carried: got %q", got)
	}
}
