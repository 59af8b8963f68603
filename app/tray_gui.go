//go:build cgo

package app

import (
	"context"
	"errors"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	// Must run before Fyne's init reads the locale; see its package doc.
	_ "github.com/subpool/subpool/app/quietlocale"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/egress"
	"github.com/subpool/subpool/internal/update"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/service"
	"github.com/subpool/subpool/ui"
)

// The tray is Fyne over GLFW, which needs cgo; tray_none.go stands in for
// it in a CGO_ENABLED=0 build, so only this file links Fyne (issue 17).

const trayBuilt = true

// trayUnavailable says why the tray cannot open here, or nil when it may.
func trayUnavailable() error { return displayProblem(os.Getenv) }

// runTrayOn runs the Fyne tray against the proxy at t until the user quits
// or ctx ends. It must run on the main goroutine.
func runTrayOn(ctx context.Context, t trayTarget, stderr io.Writer) int {
	c := &client.Client{Addr: t.addr, Token: t.token}
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := fyneapp.NewWithID("io.subpool.app")
	opts := ui.Options{
		Backend: c,
		Import: func(ctx context.Context, source string) error {
			return errors.New("importing from " + source + " is not available yet; run `subpool import " + source + "` in a terminal")
		},
		Events:    c.Events(ectx),
		Address:   t.addr,
		OpenPanel: t.openPanel,
		Usage:     c,
		Tab:       os.Getenv("SUBPOOL_TAB"),     // scripts/screenshot.sh: "usage"
		Section:   os.Getenv("SUBPOOL_SECTION"), // scripts/screenshot.sh: "google"
		Size:      windowSize(os.Getenv("SUBPOOL_WINDOW")),
		Setup: func(tool string) string {
			// Each tool's own key, as `subpool env TOOL` prints; the demo
			// (no home) has only its one key.
			key := t.clientKey
			if t.home != "" {
				if k, err := toolKey(t.home, tool); err == nil {
					key = k
				}
			}
			return setupText(tool, "http://"+t.addr, key)
		},
		About: versionText,
	}
	if t.home != "" {
		// The demo has no home of a person's to set tools up for.
		opts.SetUpTool = func(tool string, dry bool) (string, error) {
			cfg, err := config.Read(filepath.Join(t.home, config.FileName))
			if err != nil {
				return "", err
			}
			return setUpTool(t.home, cfg, tool, "", dry)
		}
		go noticeUpdate(ectx, a, t.home)
	}
	if t.home != "" {
		scfg := service.Config{Home: t.home, Listen: t.addr}
		if t.explicitHome {
			scfg.TrayArgs = []string{"tray", "--home", t.home}
		}
		opts.StartAtLogin = func() bool { on, _ := service.StartAtLogin(scfg); return on }
		opts.SetStartAtLogin = func(on bool) error { return service.SetStartAtLogin(scfg, on) }
	}
	if why := trayHostProblem(); why != "" {
		stop := withoutTrayHost(&opts, t, why, stderr)
		defer stop()
	}
	go func() {
		<-ctx.Done()
		fyne.Do(a.Quit)
	}()
	ui.Run(a, opts)
	return 0
}

// noticeUpdate tells the person once, at the tray's start, that a newer
// release is out, with its address; nothing is asked unless [update]
// check is on (updateNotice).
func noticeUpdate(ctx context.Context, a fyne.App, home string) {
	cfg, err := config.Read(filepath.Join(home, config.FileName))
	if err != nil {
		return
	}
	eg, err := egress.New(cfg.Network.Proxy)
	if err != nil {
		return
	}
	n, err := updateNotice(ctx, update.Client{HTTP: egress.Client(eg.Transport(), time.Minute)}, cfg)
	if err != nil || !n.Newer {
		return
	}
	fyne.Do(func() {
		a.SendNotification(fyne.NewNotification("subpool "+update.Plain(n.Latest)+" is out", n.String()))
	})
}

// withoutTrayHost sets the tray up as a window, for a desktop that would
// show no icon: the window says why and how to get one, as the log does,
// once. Closing it keeps a home's tray (and the proxy it may run) going,
// and `subpool` run again reopens it; the demo, which nothing could
// reopen, ends with its window.
func withoutTrayHost(opts *ui.Options, t trayTarget, why string, stderr io.Writer) (stop func()) {
	logf := log.New(stderr, "subpool: ", log.LstdFlags).Printf
	stop = func() {}
	reopen := "Closing the window ends the demo."
	if t.home != "" {
		asks, stopListen, err := reopenListen(t.home)
		if err == nil {
			opts.Reopen, stop = asks, stopListen
			reopen = "Closing the window keeps subpool running: run `subpool` to reopen it; Quit is in its menu."
			opts.Closed = func() {
				logf("the window is closed; subpool keeps serving on %s. Run `subpool` again to reopen it.", t.addr)
			}
		} else {
			logf("%v", err)
		}
	}
	logf("%s %s The panel opens as a window instead. %s", why, trayHostAdvice, reopen)
	// The window says it shorter: the log has the reason's details.
	opts.NoTrayHost = "No tray icon on this desktop. " + trayHostAdvice + " " + reopen
	opts.OpenPanel = true
	return stop
}

// windowSize reads SUBPOOL_WINDOW, "WIDTHxHEIGHT" in Fyne's units, which
// scripts/screenshot.sh sets for a panel tall enough for a whole card;
// anything else is the default size.
func windowSize(s string) fyne.Size {
	w, h, ok := strings.Cut(s, "x")
	fw, err1 := strconv.ParseFloat(w, 32)
	fh, err2 := strconv.ParseFloat(h, 32)
	if !ok || err1 != nil || err2 != nil || fw <= 0 || fh <= 0 {
		return fyne.Size{}
	}
	return fyne.NewSize(float32(fw), float32(fh))
}
