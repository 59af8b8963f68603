// Package daemon is the owner of a subpool home, as tailscale's ipnlocal
// is to its localapi and CLI: the credentials and the pool, their secrets
// in the keychain, the state file, the client keys, login refresh, usage
// polling, live config reload and the history. One Daemon starts (Start),
// serves the proxy and the admin API on one listener, is the admin API's
// Backend itself, and shuts down (Shutdown). A CLI verb that finds no
// running proxy opens the same Daemon in place (Open) under the home's
// lock. Only app, the composition root, imports this package.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/egress"
	"github.com/subpool/subpool/internal/history"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy"
	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/events"
	"github.com/subpool/subpool/proxy/pool"
)

// Options builds a server. Home-based servers (serve, the tray's
// in-process proxy) read config, keychain and state from Home; the demo
// passes Config and Keys and keeps nothing.
type Options struct {
	Home      string
	Listen    string         // overrides config.listen when set
	Config    *config.Config // demo: use this, read nothing from Home
	Keys      keychain.Store // demo: in-memory keys
	Clock     clock.Clock
	Transport http.RoundTripper
	Logf      func(string, ...any)
	// LoginRefresh is how often logins are looked over (refresher);
	// default loginRefreshEvery.
	LoginRefresh time.Duration
	// HistoryHome holds history.db when Config is given (the demo: a temp
	// dir, never the user's home); "" then keeps no history.
	HistoryHome string
	// WrapListener, when set, is given the listener before serving and
	// returns the one to serve: tests capture it to make it die.
	WrapListener func(net.Listener) net.Listener
}

// Daemon is the owner of a home: it holds the credentials and the pool,
// their secrets, the state file, the client keys, the background loops
// (login refresh, usage polling, config reload) and the history. Started,
// it serves the proxy and the admin API on one listener and is the admin
// API's Backend itself; opened in place (Open), it is the same Backend for
// CLI verbs when no proxy answers.
type Daemon struct {
	mode mode
	cfg  config.Config
	*core
	hub        *events.Hub
	proxy      *proxy.Proxy
	admin      *admin.Handler
	history    *history.DB   // nil: off, or the demo
	historyAPI admin.History // what the admin API answers history with; nil: the demo's none
	secrets    *secrets
	http       *http.Server
	ln         net.Listener
	lock       *os.File
	addr       string
	adminToken string
	clientKey  string // the client "default"'s key ("" once revoked): the tray and the demo use it
	clients    *clientStore
	// clientsLoad loads clients on first use (Open); nil once loaded.
	clientsLoad func() error
	clientsMu   sync.Mutex
	live        liveConfig // what a reload changes (reload.go)
	reloader    *reloader  // nil unless mode.reloads
	logf        func(string, ...any)
	// egress decides each outbound call's proxy and out is the one
	// transport over it (egress.go); netProxy is [network] proxy as
	// applied.
	egress   *egress.Egress
	out      http.RoundTripper
	netProxy string

	saveCh   chan struct{}
	stopSave chan struct{}
	saveDone chan struct{}

	stopRefresh context.CancelFunc
	refreshDone chan struct{}
	pollDone    chan struct{} // the usage poller (usage_poll.go) ended
	serveErr    chan error
	stopOnce    sync.Once
}

// AddrInUseError is returned when the address is taken; the message names
// the address and who holds it.
type AddrInUseError struct {
	Addr    string
	Subpool bool // the holder answers as a subpool
}

func (e *AddrInUseError) Error() string {
	if e.Subpool {
		return fmt.Sprintf("%s is already served by a running subpool; use that one (subpool list), stop it (subpool service stop), or choose another address with --listen", e.Addr)
	}
	return fmt.Sprintf("%s is in use by another program; free it or choose another address with --listen", e.Addr)
}

// Start builds the daemon o describes and serves it: it listens, claims
// the home (or, for the demo, memory), loads credentials, client keys and
// history, wires the proxy and the admin API onto the listener, and starts
// the background loops. On an error nothing is left running.
func Start(o Options) (*Daemon, error) {
	logf := o.Logf
	if logf == nil {
		logf = log.New(os.Stderr, "subpool: ", log.LstdFlags).Printf
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	d := &Daemon{mode: o.mode(), logf: logf, saveCh: make(chan struct{}, 1), stopSave: make(chan struct{}), saveDone: make(chan struct{}), serveErr: make(chan error, 1)}
	cfg, err := startConfig(o)
	if err != nil {
		return nil, err
	}
	d.cfg = cfg
	if d.egress, d.out, err = outbound(cfg, o.Transport); err != nil {
		return nil, err
	}
	d.netProxy = cfg.Network.Proxy
	ln, err := listen(cfg.Listen)
	if err != nil {
		return nil, err
	}
	if o.WrapListener != nil {
		ln = o.WrapListener(ln)
	}
	d.ln, d.addr = ln, ln.Addr().String()
	if err := d.open(o, clk); err != nil {
		ln.Close()
		if d.lock != nil {
			d.lock.Close()
		}
		return nil, err
	}
	transport := d.out
	d.proxy = d.newProxy(clk, transport)
	d.clients.inFlight = d.proxy.InFlightByClient
	d.admin = admin.New(admin.Options{Token: d.adminToken, AllowRemote: cfg.AllowRemote, Hub: d.hub, Backend: d, Clock: clk, Logf: logf,
		Refusals: d.proxy.Refusals(), History: d.historyAPI})
	d.http = d.newHTTPServer()
	d.startLoops(o, clk, transport)
	go func() { d.serveErr <- d.http.Serve(ln) }()
	d.hub.Emit(api.Event{Type: api.EventProxyStarted, Reason: "listening on " + d.addr})
	return d, nil
}

// startConfig is the configuration o starts with: the demo's, else the
// home's config.toml, with --listen applied.
func startConfig(o Options) (config.Config, error) {
	var cfg config.Config
	if o.mode() == demo {
		cfg = *o.Config
	} else {
		var err error
		cfg, err = config.Load(filepath.Join(o.Home, config.FileName))
		if err != nil {
			return cfg, err
		}
	}
	if o.Listen != "" {
		if err := config.CheckListen(o.Listen, cfg.AllowRemote, cfg.RequireClientKey); err != nil {
			return cfg, fmt.Errorf("--listen: %v", err)
		}
		cfg.Listen = o.Listen
	}
	return cfg, nil
}

// listen opens addr; a taken address says who holds it.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, &AddrInUseError{Addr: addr, Subpool: isSubpool(addr)}
		}
		return nil, fmt.Errorf("cannot listen on %s: %v", addr, unwrapOp(err))
	}
	return ln, nil
}

// open loads what the daemon owns: the home (or the demo's memory), the
// hub, the client keys, the credentials and their state, the history and
// the secrets. The caller closes the listener and the lock on an error.
func (d *Daemon) open(o Options, clk clock.Clock) error {
	keysFn, store, err := d.claim(o)
	if err != nil {
		return err
	}
	d.hub = events.NewHub(clk, 1024)
	if err := d.loadClients(o, d.cfg, keysFn, clk, d.logf); err != nil {
		return err
	}
	d.core = newCore(d.cfg, clk, keysFn, store, d.hub, d.logf)
	d.core.listen = d.addr
	if err := d.core.load(); err != nil {
		return err
	}
	d.core.pool.OnChange(func() {
		select {
		case d.saveCh <- struct{}{}:
		default:
		}
	})
	d.historyAPI = d.historyFor(o, clk)
	d.secrets = newSecrets(keysFn, d.cfg.Providers)
	d.secrets.proxies = d.core.proxies
	d.secrets.parkRegion = func(id, reason string) { d.core.pool.Park(id, "", api.ParkRegion, reason) }
	d.core.loginClient = egress.Client(d.out, outboundTimeout)
	d.secrets.projects.client = egress.Client(d.out, outboundTimeout)
	d.secrets.oauth = newOAuthManager(clk, keysFn, d.hub, d.logf, d.core.pool.SetExpiry, egress.Client(d.out, outboundTimeout), d.core.proxies.withCredential)
	d.core.onRemove = func(id string) {
		d.secrets.forget(id)
		d.secrets.oauth.Forget(id)
	}
	return nil
}

// claim takes the home: its lock (with the address written in it), its
// keychain, its state file and its admin token. The demo claims nothing:
// its keys are in memory and its token is new.
func (d *Daemon) claim(o Options) (func() (keychain.Store, error), files, error) {
	if !d.mode.ownsHome() {
		keys := o.Keys
		if keys == nil {
			keys = keychain.NewMemory()
		}
		d.adminToken = randomToken(32)
		return func() (keychain.Store, error) { return keys, nil }, noFiles{}, nil
	}
	lock, err := tryLock(filepath.Join(o.Home, lockFile))
	if errors.Is(err, errLocked) {
		return nil, nil, fmt.Errorf("another subpool is already running with home %s; stop it first (subpool service stop)", o.Home)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cannot lock %s: %v", o.Home, err)
	}
	d.lock = lock
	// Where this proxy really listens (--listen may differ from the
	// config): the CLI verbs and the tray read it to find us.
	if err := lock.Truncate(0); err == nil {
		lock.WriteAt([]byte(d.addr+"\n"), 0)
	}
	keys, warn, err := keychain.Open(d.cfg.KeychainBackend, o.Home)
	if err != nil {
		return nil, nil, err
	}
	if warn != "" {
		d.logf("warning: %s", warn)
	}
	if d.adminToken, err = adminToken(o.Home, true); err != nil {
		return nil, nil, err
	}
	return func() (keychain.Store, error) { return keys, nil }, newStateStore(o.Home, d.logf), nil
}

// historyFor is what the admin API answers history with. History is the
// home's; the demo's is in a folder of its own. A file it cannot open
// turns history off with one line, and the proxy serves on.
func (d *Daemon) historyFor(o Options, clk clock.Clock) admin.History {
	histHome := o.Home
	if d.mode == demo {
		if o.HistoryHome == "" {
			return nil
		}
		histHome = o.HistoryHome
	}
	hist, err := d.openHistory(histHome, d.cfg, clk)
	if err != nil {
		d.logf("warning: %v", err)
		return admin.HistoryOff{Reason: oneLineErr(err)}
	}
	return hist
}

// newProxy is the engine over the daemon's pool, secrets, client keys and
// live config.
func (d *Daemon) newProxy(clk clock.Clock, transport http.RoundTripper) *proxy.Proxy {
	cfg := d.cfg
	provs := map[string]*proxy.Provider{}
	for name, p := range cfg.Providers {
		// Custom keeps a built-in provider's own table when the name and
		// wire match, and applies the configured limit scope either way.
		prof := classify.Custom(name, p.Wire, p.LimitScope)
		provs[name] = &proxy.Provider{Name: name, Wire: p.Wire, BaseURL: p.BaseURL, Profile: prof, ChatOnly: p.ChatOnly}
	}
	return proxy.New(proxy.Options{
		Clock: clk, Pool: d.core.pool, Auth: d.secrets, Events: history.Tee(d.hub, d.history), Providers: provs,
		Clients: d.clients.lookup, Aliases: d.live.aliases, AllowRemote: cfg.AllowRemote, AllowOrigins: cfg.AllowOrigins,
		MaxBody: cfg.MaxBody, TransientBackoff: cfg.TransientBackoff, MaxAttempts: cfg.MaxAttempts,
		SoleProviderMax: cfg.SoleProviderMax, CapacityMax: cfg.CapacityMax, Transport: transport, Logf: d.logf,
		Fallback:          d.live.fallback,
		FirstEventTimeout: noDeadline(cfg.FirstEventTimeout), IdleTimeout: noDeadline(cfg.IdleTimeout),
	})
}

// noDeadline is a [retry] deadline as the proxy takes it: there 0 is the
// default, and "none" is negative.
func noDeadline(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// newHTTPServer serves the admin API and the model routes on one
// listener: the tray and the CLI find the proxy where the editors do.
func (d *Daemon) newHTTPServer() *http.Server {
	// The split is a prefix test, not a ServeMux: a mux cleans the path
	// first and answers "//", "/./" or "/x/../" with a redirect before
	// either guard has seen the Host, uncounted and in no provider's
	// shape. Each handler's guard runs first, on the path as it came.
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/subpool/v1/") {
			d.admin.ServeHTTP(w, r)
			return
		}
		d.proxy.ServeHTTP(w, r)
	})
	// Shared by every answer, as net/http spells the key: its capacity is
	// its length, so an append copies.
	subpoolHeader := []string{Version}
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Lets a second `subpool serve` tell "a running subpool" from
			// "another program" when the address is taken.
			w.Header()["X-Subpool"] = subpoolHeader
			mux.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 30 * time.Second,
		// A kept-alive connection with no request on it is closed after
		// 30 s, with its buffers: a minute after 500 streams, closing them
		// took the bench's RSS from 34 to 27 MiB. The clients open a new
		// one at once when they need it, on loopback. (A request body has its own deadline in the proxy;
		// a whole ReadTimeout here would cut a long stream's background
		// read.)
		IdleTimeout: 30 * time.Second,
		// Recovered handler panics and accept errors land here; they must
		// reach the log, not vanish.
		ErrorLog: log.New(logWriter(d.logf), "", 0),
	}
}

// startLoops starts what runs beside the requests: login refresh, usage
// polling, the state file's writer and the config watcher.
func (d *Daemon) startLoops(o Options, clk clock.Clock, transport http.RoundTripper) {
	cfg := d.cfg
	every := o.LoginRefresh
	if every <= 0 {
		every = loginRefreshEvery
	}
	rctx, stop := context.WithCancel(context.Background())
	d.stopRefresh, d.refreshDone = stop, make(chan struct{})
	d.core.pool.SetUsage(usageConfig(cfg.Usage))
	d.pollDone = make(chan struct{})
	go func() {
		defer close(d.refreshDone)
		r := &refresher{clk: clk, every: every, m: d.secrets.oauth, pool: d.core.pool, providers: cfg.Providers}
		r.run(rctx)
	}()
	go func() {
		defer close(d.pollDone)
		u := &usagePoller{clk: clk, every: func() time.Duration { return d.live.load().Usage.Poll },
			pool: d.core.pool, auth: d.secrets, providers: cfg.Providers, proxies: d.core.proxies,
			client: egress.Client(transport, time.Minute), logf: d.logf}
		u.run(rctx)
	}()
	go d.saveLoop()
	go d.releaseWhenIdle(rctx)
	d.watchReload()
}

// saveRetry is how soon a state write that failed (a full disk, a
// read-only home) is tried again when nothing else changes meanwhile.
var saveRetry = 5 * time.Second

// saveLoop writes the state file after changes, at most every 200 ms, so a
// burst of cooldowns costs one write. A write that failed is tried again
// every saveRetry until one works, so the cooldown it held reaches the
// file once the cause is gone, not only at the next change (issue 27).
func (d *Daemon) saveLoop() {
	defer close(d.saveDone)
	var retry <-chan time.Time
	failing := false
	for {
		select {
		case <-d.saveCh:
		case <-retry:
		case <-d.stopSave:
			return
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-d.stopSave:
			return
		}
		retry = nil
		err := d.core.saveState()
		switch {
		case err != nil:
			if !failing {
				d.logf("warning: %v; trying again every %s", err, saveRetry)
			}
			failing, retry = true, time.After(saveRetry)
		case failing:
			failing = false
			d.logf("the state file is written again")
		}
	}
}

// Shutdown stops accepting, lets in-flight requests (streams included)
// finish until ctx ends, then writes the state file and frees the home.
func (d *Daemon) Shutdown(ctx context.Context) error {
	var err error
	d.stopOnce.Do(func() {
		d.hub.Emit(api.Event{Type: api.EventProxyStopping})
		// Websockets outlive http.Server.Shutdown; close them so a tray
		// reconnects to whatever proxy comes next.
		d.admin.Close()
		if e := d.http.Shutdown(ctx); e != nil {
			d.http.Close()
			err = fmt.Errorf("in-flight requests did not finish in time; they were cut")
		}
		d.stopRefresh()
		<-d.refreshDone
		<-d.pollDone
		d.stopReload()
		close(d.stopSave)
		<-d.saveDone
		if e := d.core.saveState(); e != nil && err == nil {
			err = e
		}
		if d.history != nil {
			// After the listener: every finished request is queued by now.
			d.history.Close()
		}
		if d.lock != nil {
			d.lock.Close()
		}
	})
	return err
}

// Done reports the listener's end (nil after Shutdown).
func (d *Daemon) Done() <-chan error { return d.serveErr }

// Addr is where the daemon listens.
func (d *Daemon) Addr() string { return d.addr }

// AdminToken is the token the admin API asks for.
func (d *Daemon) AdminToken() string { return d.adminToken }

// ClientKey is the client "default"'s key ("" once revoked): the tray and
// the demo send it.
func (d *Daemon) ClientKey() string { return d.clientKey }

// Hub is the daemon's event hub.
func (d *Daemon) Hub() *events.Hub { return d.hub }

// Pool is the daemon's credential pool.
func (d *Daemon) Pool() *pool.Pool { return d.core.pool }

// History is the history database; nil when history is off.
func (d *Daemon) History() *history.DB { return d.history }

// logWriter adapts a printf-style logger for log.New.
type logWriter func(string, ...any)

func (f logWriter) Write(p []byte) (int, error) {
	f("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// isSubpool asks whoever holds addr whether it is a subpool.
func isSubpool(addr string) bool {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/subpool/v1/status")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.Header.Get("X-Subpool") != ""
}

func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// EnsureClientKey returns the key clients present, creating it once.
func EnsureClientKey(keys keychain.Store) (string, error) {
	k, err := keys.Get(clientKeyName)
	if err == nil && k != "" {
		return k, nil
	}
	if err != nil && !errors.Is(err, keychain.ErrNotFound) {
		return "", fmt.Errorf("cannot read the client key from the %s keychain: %w", keys.Name(), err)
	}
	k = "sp-" + randomToken(24)
	if err := keys.Set(clientKeyName, k); err != nil {
		return "", fmt.Errorf("cannot store the client key in the %s keychain: %w", keys.Name(), err)
	}
	return k, nil
}
