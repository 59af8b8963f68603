package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	// Must run before Fyne's init reads the locale; see its package doc.
	_ "github.com/subpool/subpool/app/quietlocale"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/config"
	"github.com/subpool/subpool/service"
	"github.com/subpool/subpool/ui"
)

// trayTarget is the proxy the tray shows.
type trayTarget struct {
	addr, token, clientKey string
	home                   string // "" for the demo: no login service toggle
	explicitHome           bool
	// openPanel shows the panel at start: Fyne cannot tell whether a tray
	// host is running, and the demo must show something either way.
	openPanel bool
}

func cmdTray(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("tray", "[--home DIR]", "The tray app. Connects to the proxy answering on the configured address (the login service,\nor `subpool serve`); when none answers, runs one in-process and restarts it if it stops.")
	homeFlag := f.String("home", "", "home folder")
	if code, done := f.parse(args, stdout, stderr); done {
		return code
	}
	if !hasDisplay() {
		fmt.Fprintln(stderr, "subpool: no display found; run `subpool serve` for the headless proxy (or `subpool demo`)")
		return 1
	}
	home, cfg, err := homeConfig(*homeFlag)
	if err != nil {
		return fail(stderr, "tray", err)
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
	t := trayTarget{addr: liveAddr(home, cfg), home: home, explicitHome: explicitHome}
	c, _, err := runningClient(ctx, home, cfg)
	if err != nil {
		return t, nil, err
	}
	if c != nil {
		logf("connected to the proxy on %s", t.addr)
		t.token = c.Token
		if keys, _, err := keychain.Open(cfg.KeychainBackend, home); err == nil {
			t.clientKey, _ = ensureClientKey(keys)
		}
		return t, nil, nil
	}
	sup, err := superviseServer(ctx, serverOptions{Home: home, Logf: logf})
	if err != nil {
		var inUse *errAddrInUse
		if errors.As(err, &inUse) && inUse.subpool {
			// Lost a race with a proxy starting at the same moment.
			return trayConnect(ctx, home, cfg, explicitHome, logf)
		}
		return t, nil, err
	}
	s := sup.current()
	t.addr, t.token, t.clientKey = s.addr, s.adminToken, s.clientKey
	logf("no proxy was running; serving on http://%s in-process", t.addr)
	return t, sup, nil
}

func hasDisplay() bool {
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" && runtime.GOOS != "openbsd" {
		return true
	}
	return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}

// supervisor keeps an in-process proxy running: if its listener ends by
// itself, it is started again after a pause, and the tray hears of it.
type supervisor struct {
	opts   serverOptions
	mu     sync.Mutex
	srv    *server
	cancel context.CancelFunc
	done   chan struct{}
}

func superviseServer(ctx context.Context, o serverOptions) (*supervisor, error) {
	s, err := startServer(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	sup := &supervisor{opts: o, srv: s, cancel: cancel, done: make(chan struct{})}
	go sup.watch(ctx)
	return sup, nil
}

func (sup *supervisor) current() *server {
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
				opts.Listen = s.addr
				ns, err := startServer(opts)
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

// runTrayOn runs the Fyne tray against the proxy at t until the user quits
// or ctx ends. It must run on the main goroutine.
func runTrayOn(ctx context.Context, t trayTarget, stderr io.Writer) int {
	c := &client.Client{Addr: t.addr, Token: t.token}
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := fyneapp.NewWithID("io.subpool.app")
	opts := ui.Options{
		Backend:   trayBackend{c: c},
		Events:    c.Events(ectx),
		Address:   t.addr,
		OpenPanel: t.openPanel,
		Setup: func(tool string) string {
			return setupText(tool, "http://"+t.addr, t.clientKey)
		},
	}
	if t.home != "" {
		scfg := service.Config{Home: t.home, Listen: t.addr}
		if t.explicitHome {
			scfg.TrayArgs = []string{"tray", "--home", t.home}
		}
		opts.StartAtLogin = func() bool { on, _ := service.StartAtLogin(scfg); return on }
		opts.SetStartAtLogin = func(on bool) error { return service.SetStartAtLogin(scfg, on) }
	}
	go func() {
		<-ctx.Done()
		fyne.Do(a.Quit)
	}()
	ui.Run(a, opts)
	return 0
}

// trayBackend adapts the admin client to what the tray calls.
type trayBackend struct{ c *client.Client }

func (b trayBackend) Pause(ctx context.Context, id string) error  { return b.c.Pause(ctx, id) }
func (b trayBackend) Resume(ctx context.Context, id string) error { return b.c.Resume(ctx, id) }
func (b trayBackend) Reset(ctx context.Context, id string) error  { return b.c.Reset(ctx, id) }
func (b trayBackend) Remove(ctx context.Context, id string) error { return b.c.Remove(ctx, id) }
func (b trayBackend) AddKey(ctx context.Context, provider, label, key string) error {
	_, err := b.c.AddCredential(ctx, api.AddCredential{Provider: provider, Label: label, Kind: api.KindAPIKey, Secret: map[string]string{"key": key}})
	return err
}
func (b trayBackend) StartLogin(ctx context.Context, provider, label string) (api.LoginStart, error) {
	return b.c.StartLogin(ctx, provider, label)
}
func (b trayBackend) Import(ctx context.Context, source string) error {
	return errors.New("importing from " + source + " is not available yet; run `subpool import " + source + "` in a terminal")
}
