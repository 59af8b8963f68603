package view

import (
	"strings"
	"testing"

	"github.com/subpool/subpool/proxy/api"
)

// A history that cannot be written is a problem a person must act on: it
// is notified once, shown in the banner while it lasts (with the rows lost,
// from status), and cleared when writes work again (issue 27: the disk
// full or the file read-only was invisible).
func TestHistoryProblemIsShown(t *testing.T) {
	h := newHarness(t)
	snap := snapshot()
	snap.History = &api.HistoryStatus{Failed: 3, Problem: "the disk is full: free some space, and the rows kept meanwhile are written"}
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snap})
	if v := h.view(); !strings.Contains(v.Banner, "not being saved: the disk is full") || !strings.Contains(v.Banner, "3 rows were lost") {
		t.Fatalf("banner %q, want the history's problem and the rows lost", v.Banner)
	}
	h.send(api.Event{Type: api.EventHistoryProblem})
	if v := h.view(); v.Banner != "" {
		t.Fatalf("banner %q after the history writes again", v.Banner)
	}
	n := h.send(api.Event{Type: api.EventHistoryProblem, Reason: "the history file is read-only: make it writable (history.db in the home)"})
	if len(n) != 1 || n[0].Key != "history/problem" || !strings.Contains(n[0].Body, "read-only") {
		t.Fatalf("notices %+v, want one about the read-only file", n)
	}
	if v := h.view(); !strings.Contains(v.Banner, "read-only") {
		t.Fatalf("banner %q", v.Banner)
	}
}

// A refused edit of config.toml stays in the banner until a reload takes
// one (status carries it for a tray that connects later).
func TestConfigProblemIsShown(t *testing.T) {
	h := newHarness(t)
	snap := snapshot()
	snap.ConfigProblem = "config.toml is empty"
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snap})
	if v := h.view(); !strings.Contains(v.Banner, "config.toml edit refused: config.toml is empty") {
		t.Fatalf("banner %q", v.Banner)
	}
	h.send(api.Event{Type: api.EventConfigReloaded})
	if v := h.view(); v.Banner != "" {
		t.Fatalf("banner %q after a reload took", v.Banner)
	}
	h.send(api.Event{Type: api.EventConfigRejected, Reason: "listen was dropped"})
	if v := h.view(); !strings.Contains(v.Banner, "listen was dropped") {
		t.Fatalf("banner %q", v.Banner)
	}
}
