package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/keychain"
)

// trayTarget is the proxy the tray shows.
type trayTarget struct {
	addr, token, clientKey string
	home                   string // "" for the demo: no login service toggle
	explicitHome           bool
	// openPanel shows the panel at start: the demo must show something
	// whether or not a tray host shows its icon (tray_host.go).
	openPanel bool
}

func cmdTray(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("tray", "[--home DIR]", "The tray app. Connects to the proxy answering on the configured address (the login service,\nor `subpool serve`); when none answers, runs one in-process and restarts it if it stops.")
	homeFlag := f.String("home", "", "home folder")
	if code, done := f.parse(args, stdout, stderr); done {
		return code
	}
	// Checked before anything starts: without it Fyne panics with a stack
	// trace on a display it cannot open (issue 15).
	if err := trayUnavailable(); err != nil {
		fmt.Fprintf(stderr, "subpool: %v; run `subpool serve` for the headless proxy (or `subpool demo`)\n", err)
		return 1
	}
	home, cfg, err := homeConfig(*homeFlag)
	if err != nil {
		return fail(stderr, "tray", err)
	}
	// A tray without an icon listens for this (tray_reopen.go): its
	// window is the way back in.
	if reopenAsk(home) {
		fmt.Fprintln(stdout, "subpool is already running on "+home+"; its window is open again.")
		return 0
	}
	logger := log.New(stderr, "subpool: ", log.LstdFlags)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	t, sup, err := trayConnect(ctx, home, cfg, *homeFlag != "" || os.Getenv("SUBPOOL_HOME") != "", logger.Printf)
	if err != nil {
		return fail(stderr, "tray", err)
	}
	if sup != nil {
		defer sup.stop()
	}
	return runTrayOn(ctx, t, stderr)
}

// trayConnect finds the proxy the tray shows: the one answering on the
// configured address (the login service, or `subpool serve`), else one it
// starts in-process and supervises. sup is nil when it connected.
func trayConnect(ctx context.Context, home string, cfg config.Config, explicitHome bool, logf func(string, ...any)) (trayTarget, *supervisor, error) {
	t := trayTarget{addr: daemon.LiveAddr(home, cfg), home: home, explicitHome: explicitHome}
	c, err := runningClient(ctx, home, cfg)
	if err != nil {
		return t, nil, err
	}
	if c != nil {
		logf("connected to the proxy on %s", t.addr)
		t.token = c.Token
		if keys, _, err := keychain.Open(cfg.KeychainBackend, home); err == nil {
			t.clientKey, _ = daemon.EnsureClientKey(keys)
		}
		return t, nil, nil
	}
	sup, err := superviseServer(ctx, daemon.Options{Home: home, Logf: logf})
	if err != nil {
		var inUse *daemon.AddrInUseError
		if errors.As(err, &inUse) && inUse.Subpool {
			// Lost a race with a proxy starting at the same moment.
			return trayConnect(ctx, home, cfg, explicitHome, logf)
		}
		return t, nil, err
	}
	s := sup.current()
	t.addr, t.token, t.clientKey = s.Addr(), s.AdminToken(), s.ClientKey()
	logf("no proxy was running; serving on http://%s in-process", t.addr)
	return t, sup, nil
}

// supervisor keeps an in-process proxy running: if its listener ends by
// itself, it is started again after a pause, and the tray hears of it.
type supervisor struct {
	opts   daemon.Options
	mu     sync.Mutex
	srv    *daemon.Daemon
	cancel context.CancelFunc
	done   chan struct{}
}

func superviseServer(ctx context.Context, o daemon.Options) (*supervisor, error) {
	s, err := daemon.Start(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	sup := &supervisor{opts: o, srv: s, cancel: cancel, done: make(chan struct{})}
	go sup.watch(ctx)
	return sup, nil
}

func (sup *supervisor) current() *daemon.Daemon {
	sup.mu.Lock()
	defer sup.mu.Unlock()
	return sup.srv
}

func (sup *supervisor) watch(ctx context.Context) {
	defer close(sup.done)
	for {
		s := sup.current()
		select {
		case <-ctx.Done():
			return
		case err := <-s.Done():
			sup.opts.Logf("the in-process proxy stopped unexpectedly (%v); restarting it", err)
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s.Shutdown(sctx)
			cancel()
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				opts := sup.opts
				opts.Listen = s.Addr()
				ns, err := daemon.Start(opts)
				if err == nil {
					sup.mu.Lock()
					sup.srv = ns
					sup.mu.Unlock()
					break
				}
				sup.opts.Logf("restart failed: %v; trying again", err)
			}
		}
	}
}

func (sup *supervisor) stop() {
	sup.cancel()
	<-sup.done
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	sup.current().Shutdown(ctx)
}
