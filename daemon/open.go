package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// Opening a home in place: the CLI's verbs act on the home directly, under
// its lock, when no proxy answers.

// Open opens the home's backend in place, without serving: credentials and
// state are loaded, the keychain opens on first use, and the client keys
// load on first use. It holds the home's lock until Close, so it is the
// home's one writer while it is open.
func Open(home string, cfg config.Config, logf func(string, ...any)) (*Daemon, error) {
	lock, err := lockHome(home, cfg)
	if err != nil {
		return nil, err
	}
	keys := LazyKeys(cfg.KeychainBackend, home)
	d := &Daemon{mode: inPlace, cfg: cfg, lock: lock, logf: logf}
	d.core = newCore(cfg, clock.Real{}, keys, newStateStore(home, logf), api.Discard, logf)
	if err := d.core.load(); err != nil {
		lock.Close()
		return nil, err
	}
	d.clients = &clientStore{home: home, keys: keys, clk: clock.Real{}, events: api.Discard, providers: cfg.ProviderNames, logf: logf}
	d.clientsLoad = func() error { return loadClients(d.clients) }
	return d, nil
}

// Keys opens the home's keychain (on first use, when opened in place).
func (d *Daemon) Keys() (keychain.Store, error) { return d.core.keys() }

// Close frees the home Open locked. A started Daemon stops with Shutdown.
func (d *Daemon) Close() error {
	if d.lock == nil {
		return nil
	}
	return d.lock.Close()
}

// LiveAddr is where the home's proxy answers: the address a running serve
// wrote into the lock file (it may have been started with --listen), else
// the configured one. A stale file only costs a refused connection.
func LiveAddr(home string, cfg config.Config) string {
	if b, err := os.ReadFile(filepath.Join(home, lockFile)); err == nil {
		if a := strings.TrimSpace(string(b)); a != "" {
			if _, _, err := net.SplitHostPort(a); err == nil {
				return a
			}
		}
	}
	return dialAddr(cfg.Listen)
}

// dialAddr turns a listen address into one to connect to.
func dialAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// lockHome takes the home's lock for a verb that acts on it directly
// because no proxy answers; a holder that does not answer is named.
func lockHome(home string, cfg config.Config) (*os.File, error) {
	lock, err := tryLock(filepath.Join(home, lockFile))
	if errors.Is(err, errLocked) {
		return nil, fmt.Errorf("a subpool process holds %s but does not answer on %s; if it is starting, try again in a moment", home, LiveAddr(home, cfg))
	}
	return lock, err
}

// LazyKeys opens the home's keychain on first use and keeps it: a verb
// that never needs a secret never touches the keychain (which may ask
// for an unlock). Its warning (the file backend) goes to stderr once.
func LazyKeys(backend, home string) func() (keychain.Store, error) {
	var ks keychain.Store
	return func() (keychain.Store, error) {
		if ks != nil {
			return ks, nil
		}
		k, warn, err := keychain.Open(backend, home)
		if err != nil {
			return nil, err
		}
		if warn != "" {
			fmt.Fprintln(os.Stderr, "subpool: warning:", warn)
		}
		ks = k
		return k, nil
	}
}
