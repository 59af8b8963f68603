package app

import (
	"os"
	"path/filepath"
	"testing"
)

// A second tray on the same home reaches the first one's socket, which
// then asks its UI to show the window; with nobody listening, it does not.
func TestReopenAsksTheRunningTray(t *testing.T) {
	home := t.TempDir()
	if reopenAsk(home) {
		t.Fatal("a tray answered on an empty home")
	}
	asks, stop, err := reopenListen(home)
	if err != nil {
		t.Fatal(err)
	}
	if !reopenAsk(home) {
		t.Fatal("the running tray did not answer")
	}
	<-asks // the UI would show its window now
	if _, _, err := reopenListen(home); err == nil {
		t.Error("a second listener took the socket of a live tray")
	}
	stop()
	if reopenAsk(home) {
		t.Error("answered after stop")
	}
}

// A socket left by a tray that died is replaced, not refused.
func TestReopenReplacesALeftoverSocket(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "panel.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stop, err := reopenListen(home)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !reopenAsk(home) {
		t.Error("no answer on the replaced socket")
	}
}
