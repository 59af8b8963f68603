package daemon

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/subpool/subpool/proxy/policy"

	"github.com/fsnotify/fsnotify"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// Config reloads. An edit of config.toml (seen by watching the home, after
// a quiet moment), SIGHUP and POST /subpool/v1/reload all read the file
// again. A file that does not validate is refused in one log line naming
// the key, with a config_rejected event, and the running config stays.
// Otherwise the keys that can change live (config.Diff) are applied at
// once and the others are named as waiting for the next start, with a
// config_reloaded event. A request already in flight keeps what it
// started with: each request reads the live config once, when it needs
// it (the aliases when it is admitted, the ladder when it cools).

// reloadQuiet is how long the file must stay unchanged before it is read:
// editors write a file in several steps (truncate, write, rename).
const reloadQuiet = 300 * time.Millisecond

// liveConfig is the running configuration, swapped whole by a reload.
type liveConfig struct {
	p atomic.Pointer[config.Config]
}

func (l *liveConfig) load() *config.Config  { return l.p.Load() }
func (l *liveConfig) store(c config.Config) { l.p.Store(&c) }

// aliases is proxy.Options.Aliases.
func (l *liveConfig) aliases() map[string][]proxy.FallbackTarget {
	c := l.load()
	if len(c.Models) == 0 {
		return nil
	}
	out := make(map[string][]proxy.FallbackTarget, len(c.Models))
	for name, ts := range c.Models {
		for _, t := range ts {
			out[name] = append(out[name], proxy.FallbackTarget(t))
		}
	}
	return out
}

// fallback is proxy.Options.Fallback.
func (l *liveConfig) fallback(provider, model string) (out []proxy.FallbackTarget) {
	for _, t := range l.load().Fallback.Targets(provider, model) {
		out = append(out, proxy.FallbackTarget(t))
	}
	return out
}

// reloader reads config.toml again on demand and applies it.
type reloader struct {
	path   string
	live   *liveConfig
	apply  func(config.Config) // the live keys, onto the running parts
	events api.Emitter
	logf   func(string, ...any)

	// listenFlag is --listen when given: the file's listen is then not
	// what runs, and not a change either.
	listenFlag string

	// fileKeys are the keys of the file last taken (config.CutShort);
	// reload only.
	fileKeys []string
	// problem is why the last reload was refused, "" once one is taken;
	// status shows it.
	problem atomic.Pointer[string]

	stop context.CancelFunc
	done chan struct{}
	mu   sync.Mutex // one reload at a time
}

// reload reads the file and applies what can change live; why names what
// asked (a file edit, SIGHUP, the admin API) for the log.
func (r *reloader) reload(why string) api.ReloadResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	next, err := config.Read(r.path)
	if err != nil {
		return r.refuse(why, oneLineErr(err))
	}
	if msg := config.CutShort(r.fileKeys, next.FileKeys(), r.listenFlag != ""); msg != "" {
		return r.refuse(why, msg)
	}
	cur := *r.live.load()
	if r.listenFlag != "" {
		next.Listen = cur.Listen
	}
	applied := withLiveKeys(cur, next)
	if applied.AllowRemote && !applied.RequireClientKey {
		// allow_remote waits for a restart, require_client_key would not:
		// together they would serve any Host without a key until then.
		return r.refuse(why, "require_client_key: allow_remote = true runs until the next start, so require_client_key must stay true until then; restart subpool to change both")
	}
	r.fileKeys = next.FileKeys()
	r.problem.Store(nil)
	d := config.Diff(cur, next)
	if len(d.Live) == 0 && len(d.Restart) == 0 {
		return api.ReloadResult{}
	}
	r.live.store(applied)
	r.apply(applied)
	msg := DescribeReload(d)
	r.logf("config.toml reloaded (%s): %s", why, msg)
	r.events.Emit(api.Event{Type: api.EventConfigReloaded, Reason: msg})
	return api.ReloadResult{Live: d.Live, Restart: d.Restart}
}

// refuse keeps the running config and says why, in the log, in a
// config_rejected event and in status until a reload takes a file.
func (r *reloader) refuse(why, msg string) api.ReloadResult {
	r.logf("config.toml edit refused (%s), the running config stays: %s", why, msg)
	r.events.Emit(api.Event{Type: api.EventConfigRejected, Reason: msg})
	r.problem.Store(&msg)
	return api.ReloadResult{Error: msg}
}

// Problem is why the last reload was refused, "" when it was not.
func (r *reloader) Problem() string {
	if p := r.problem.Load(); p != nil {
		return *p
	}
	return ""
}

// withLiveKeys is cur with the keys config.Diff calls live taken from
// next; everything else keeps running as it started.
func withLiveKeys(cur, next config.Config) config.Config {
	cur.RequireClientKey = next.RequireClientKey
	cur.Ladder, cur.ResetAfter, cur.MaxInFlight = next.Ladder, next.ResetAfter, next.MaxInFlight
	cur.Fallback = next.Fallback
	cur.Models = next.Models
	cur.MaxBody = next.MaxBody
	cur.SoleProviderMax, cur.CapacityMax = next.SoleProviderMax, next.CapacityMax
	cur.TransientBackoff, cur.MaxAttempts = next.TransientBackoff, next.MaxAttempts
	cur.FirstEventTimeout, cur.IdleTimeout = next.FirstEventTimeout, next.IdleTimeout
	cur.Usage = next.Usage
	cur.Subscriptions = next.Subscriptions
	cur.Network = next.Network
	return cur
}

// DescribeReload says in one line what a reload applied and what waits
// for the next start.
func DescribeReload(d config.Reload) string {
	var parts []string
	if len(d.Live) > 0 {
		parts = append(parts, "applied "+strings.Join(d.Live, ", "))
	}
	if len(d.Restart) > 0 {
		parts = append(parts, strings.Join(d.Restart, ", ")+" changed but take effect at the next start (restart subpool)")
	}
	return strings.Join(parts, "; ")
}

// watch reloads on SIGHUP and whenever config.toml changes, until ctx
// ends. The home is watched rather than the file, since editors replace a
// file by renaming another onto it. A home that cannot be watched costs
// one warning: SIGHUP and the admin API still reload.
func (r *reloader) watch(ctx context.Context, hup <-chan os.Signal, w *fsnotify.Watcher) {
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		defer w.Close()
		events, errs = w.Events, w.Errors
	}
	name := filepath.Base(r.path)
	var quiet *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			if quiet != nil {
				quiet.Stop()
			}
			return
		case <-hup:
			r.reload("SIGHUP")
		case ev := <-events:
			if filepath.Base(ev.Name) != name || ev.Op == fsnotify.Chmod {
				continue
			}
			if quiet == nil {
				quiet = time.NewTimer(reloadQuiet)
			} else {
				quiet.Reset(reloadQuiet)
			}
			fire = quiet.C
		case <-fire:
			fire = nil
			r.reload("file changed")
		case err := <-errs:
			r.logf("warning: watching config.toml: %v", err)
		}
	}
}

// loadClients sets up the client keys and the live config of a starting
// server; a home-based one also gets its reloader.
func (d *Daemon) loadClients(o Options, cfg config.Config, keys func() (keychain.Store, error), clk clock.Clock, logf func(string, ...any)) error {
	home := o.Home
	if !d.mode.ownsHome() {
		home = "" // the demo keeps its keys in memory
	}
	d.clients = &clientStore{home: home, keys: keys, clk: clk, events: d.hub, providers: cfg.ProviderNames, logf: logf, open: !cfg.RequireClientKey}
	if err := loadClients(d.clients); err != nil {
		return err
	}
	d.clientKey, _ = d.clients.key(defaultClient)
	d.live.store(cfg)
	if d.mode.reloads() {
		d.reloader = &reloader{path: filepath.Join(o.Home, config.FileName), live: &d.live, events: d.hub, logf: logf,
			fileKeys: cfg.FileKeys(),
			apply: func(c config.Config) {
				d.core.pool.SetTuning(c.Ladder, c.ResetAfter, c.MaxInFlight)
				d.core.pool.SetUsage(usageConfig(c.Usage))
				d.core.setSubscriptions(c.Subscriptions)
				d.applyNetwork(c.Network)
				d.clients.setOpen(!c.RequireClientKey)
				if d.proxy != nil {
					d.proxy.Tune(policy.Config{SoleProviderMax: c.SoleProviderMax, CapacityMax: c.CapacityMax,
						TransientBackoff: c.TransientBackoff, MaxAttempts: c.MaxAttempts,
						FirstEventTimeout: noDeadline(c.FirstEventTimeout), IdleTimeout: noDeadline(c.IdleTimeout)}, c.MaxBody)
				}
			}}
		// --listen is not in the file: a reload must not call it a change.
		if o.Listen != "" {
			d.reloader.listenFlag = o.Listen
		}
	}
	return nil
}

// watchReload starts noticing config edits and SIGHUP.
func (d *Daemon) watchReload() {
	if !d.mode.reloads() {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	d.reloader.stop, d.reloader.done = stop, make(chan struct{})
	// Registered before serving: a SIGHUP with nobody listening would end
	// the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	// Watching starts before serving, too: an edit made just after the
	// start must not be missed.
	w, err := fsnotify.NewWatcher()
	if err == nil {
		if err = w.Add(filepath.Dir(d.reloader.path)); err != nil {
			w.Close()
			w = nil
		}
	}
	if err != nil {
		d.logf("warning: config.toml edits will not be noticed (%v); run `subpool reload` or send SIGHUP after editing", err)
	}
	go func() {
		defer close(d.reloader.done)
		defer signal.Stop(hup)
		defer func() {
			// A broken watcher costs live reloads, not the proxy.
			if v := recover(); v != nil {
				d.logf("config watcher stopped: %v; edits now need `subpool reload` or a restart", v)
			}
		}()
		d.reloader.watch(ctx, hup, w)
	}()
}

// LiveConfig is the configuration running now: the one the daemon started
// with, and the live keys of every reload since.
func (d *Daemon) LiveConfig() config.Config { return *d.live.load() }

// StopWatchingConfig stops noticing config.toml edits and SIGHUP; Reload
// still reads the file. Tests use it to choose when an edit is read.
func (d *Daemon) StopWatchingConfig() { d.stopReload() }

func (d *Daemon) stopReload() {
	if !d.mode.reloads() || d.reloader.stop == nil {
		return
	}
	d.reloader.stop()
	<-d.reloader.done
}
