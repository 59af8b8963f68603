//go:build screenshots

package ui

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/subpool/subpool/proxy/api"
)

// go test -tags screenshots ./ui -run TestScreenshots writes the panel in
// three states to docs/screenshots (or $SUBPOOL_SHOTS), drawn by Fyne's
// software painter from the widgets the tray shows: every credential
// ready; one cooling while requests are held for it; one needing a login,
// its dialog open.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("SUBPOOL_SHOTS")
	if dir == "" {
		dir = "../docs/screenshots"
	}
	shoot := func(h *harness, name string) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := png.Encode(f, h.u.win.Canvas().Capture()); err != nil {
			t.Fatal(err)
		}
	}
	open := func() *harness {
		h := newHarness(t, nil)
		h.u.win.Resize(fyne.NewSize(560, 980))
		h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
		return h
	}
	shoot(open(), "panel-ready.png")

	h := open()
	h.send(coolC1(), api.Event{Type: api.EventWaitStarted, Provider: "anthropic", CredentialID: "c2", Kind: api.WaitSoleProvider,
		Until: until(30 * time.Second)})
	h.clk.Advance(4 * time.Second)
	h.u.redraw()
	shoot(h, "panel-cooling.png")

	h = open()
	h.send(reloginC2())
	test.Tap(h.row("anthropic", "c2").relogin)
	h.nextCall()
	h.runUI()
	shoot(h, "panel-login.png")
}
