package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/pool"
)

// Version is set by the build (-ldflags "-X …daemon.Version=…").
var Version = "dev"

// core holds the credentials and the pool. The running proxy serves the
// admin API from it; CLI verbs use one directly when no proxy answers.
// It is the single writer of the home's files and of credential secrets.
type core struct {
	cfg    config.Config
	clk    clock.Clock
	keys   func() (keychain.Store, error) // opened on first use: list needs no keychain
	store  *stateStore                    // nil for the demo, which keeps nothing
	pool   *pool.Pool
	events api.Emitter
	logf   func(string, ...any)
	listen string
	start  time.Time
	// onRemove lets the authenticator drop a removed credential's cached
	// secret.
	onRemove func(id string)

	mu    sync.Mutex
	creds []CredentialRecord
	// subs is [subscriptions] as last loaded: the logins config.toml
	// opens to every tool.
	subs config.Subscriptions

	logins browserLogins // the tray's logins in progress (login_pending.go)
}

func newCore(cfg config.Config, clk clock.Clock, keys func() (keychain.Store, error), store *stateStore, em api.Emitter, logf func(string, ...any)) *core {
	c := &core{cfg: cfg, clk: clk, keys: keys, store: store, events: em, logf: logf, listen: cfg.Listen, start: clk.Now(),
		subs: cfg.Subscriptions}
	c.pool = pool.New(clk, pool.Config{Ladder: cfg.Ladder, ResetAfter: cfg.ResetAfter, MaxInFlight: cfg.MaxInFlight}, em)
	for _, name := range cfg.ProviderNames() {
		c.pool.SetProvider(name, cfg.Providers[name].LimitScope)
	}
	return c
}

// load restores credentials and pool state from the home.
func (c *core) load() error {
	if c.store == nil {
		return nil
	}
	recs, err := c.store.loadCreds()
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.creds = recs
	c.mu.Unlock()
	for _, r := range recs {
		if _, ok := c.cfg.Providers[r.Provider]; !ok {
			c.logf("warning: credential %s (%s) belongs to provider %q, which config.toml no longer defines; it is ignored until the provider is back", r.ID, r.Label, r.Provider)
			continue
		}
		c.pool.Add(c.poolCred(r))
	}
	c.warnUnmatchedSubs()
	c.pool.Restore(c.store.load().Pool)
	return nil
}

func (c *core) poolCred(r CredentialRecord) pool.Credential {
	c.mu.Lock()
	opened := c.subs.OpensToOthers(r.ID, r.Label)
	c.mu.Unlock()
	// Only a login kept for its own tool has anything to open (tools.go).
	opened = api.SubscriptionTool(r.Provider, r.Kind) != "" && (r.OtherTools || opened)
	return pool.Credential{ID: r.ID, Provider: r.Provider, Label: r.Label, Kind: r.Kind, Source: r.Source,
		MaxInFlight: c.cfg.Providers[r.Provider].MaxInFlight, OtherTools: opened}
}

// saveState writes the pool's state file.
func (c *core) saveState() error {
	if c.store == nil {
		return nil
	}
	return c.store.save(stateDoc{Pool: c.pool.State()})
}

func (c *core) record(id string) (CredentialRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.creds {
		if r.ID == id {
			return r, true
		}
	}
	return CredentialRecord{}, false
}

// Status implements admin.Backend.
func (c *core) Status(ctx context.Context) api.Status {
	st := api.Status{Version: Version, Listen: c.listen, StartedAt: c.start.UTC(), Now: c.clk.Now().UTC()}
	for _, name := range c.cfg.ProviderNames() {
		p := c.cfg.Providers[name]
		creds := c.pool.Status(name)
		if creds == nil {
			creds = []api.CredentialStatus{}
		}
		st.Providers = append(st.Providers, api.ProviderStatus{
			Name: name, Wire: p.Wire, LimitScope: p.LimitScope,
			Cooldown: c.pool.ProviderCooldown(name), Credentials: creds,
		})
	}
	return st
}

// AddCredential implements admin.Backend: the secret goes to the keychain
// first, so a credential is never listed without one.
func (c *core) AddCredential(ctx context.Context, req api.AddCredential) (string, error) {
	rec, secret, err := c.validateAdd(req)
	if err != nil {
		return "", err
	}
	keys, err := c.keys()
	if err != nil {
		return "", err
	}
	if id := c.awaitingRelogin(rec); id != "" {
		// "Log in again" on a parked login: same row, fresh tokens.
		if err := keys.Set(SecretKey(id), secret); err != nil {
			return "", fmt.Errorf("cannot store the secret in the %s keychain: %w", keys.Name(), err)
		}
		if c.onRemove != nil {
			c.onRemove(id) // drop cached tokens of the dead login
		}
		c.pool.Unpark(id)
		return id, c.saveState()
	}
	if err := keys.Set(SecretKey(rec.ID), secret); err != nil {
		return "", fmt.Errorf("cannot store the secret in the %s keychain: %w", keys.Name(), err)
	}
	c.mu.Lock()
	c.creds = append(c.creds, rec)
	recs := slices.Clone(c.creds)
	c.mu.Unlock()
	if c.store != nil {
		if err := c.store.saveCreds(recs); err != nil {
			c.mu.Lock()
			c.creds = slices.DeleteFunc(c.creds, func(r CredentialRecord) bool { return r.ID == rec.ID })
			c.mu.Unlock()
			keys.Delete(SecretKey(rec.ID))
			return "", err
		}
	}
	c.pool.Add(c.poolCred(rec))
	return rec.ID, nil
}

func (c *core) validateAdd(req api.AddCredential) (CredentialRecord, string, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", api.ErrBadRequest, fmt.Sprintf(format, a...))
	}
	if _, ok := c.cfg.Providers[req.Provider]; !ok {
		return CredentialRecord{}, "", bad("unknown provider %q (known: %s; custom ones are defined in config.toml)", req.Provider, strings.Join(c.cfg.ProviderNames(), ", "))
	}
	label := strings.TrimSpace(req.Label)
	if label == "" {
		return CredentialRecord{}, "", bad("a label is required, e.g. --label work")
	}
	if len(label) > 64 || strings.ContainsAny(label, "\n\r\t") {
		return CredentialRecord{}, "", bad("the label must be one line of at most 64 characters")
	}
	var secret map[string]string
	switch req.Kind {
	case api.KindAPIKey:
		k := strings.TrimSpace(req.Secret["key"])
		if k == "" {
			return CredentialRecord{}, "", bad("the API key is empty")
		}
		if strings.ContainsAny(k, " \n\r\t") {
			return CredentialRecord{}, "", bad("the API key contains white space; paste only the key")
		}
		secret = map[string]string{"key": k}
	case api.KindOAuth:
		if req.Secret["access_token"] == "" && req.Secret["refresh_token"] == "" {
			return CredentialRecord{}, "", bad("an oauth credential needs access_token or refresh_token")
		}
		secret = req.Secret
	default:
		return CredentialRecord{}, "", bad("kind must be %q or %q", api.KindAPIKey, api.KindOAuth)
	}
	switch req.Source {
	case "", "claude-code", "codex", "gemini-cli":
	default:
		return CredentialRecord{}, "", bad("source must be \"claude-code\", \"codex\" or \"gemini-cli\"")
	}
	b, _ := json.Marshal(secret)
	rec := CredentialRecord{ID: newCredID(req.Provider), Provider: req.Provider, Label: label, Kind: req.Kind, Source: req.Source, Added: c.clk.Now().UTC()}
	return rec, string(b), nil
}

// awaitingRelogin returns the id of a login of rec's provider and label
// that is parked for re-login, if there is one: a new login with that
// label is the user answering "log in again".
func (c *core) awaitingRelogin(rec CredentialRecord) string {
	if rec.Kind != api.KindOAuth {
		return ""
	}
	for _, st := range c.pool.Status(rec.Provider) {
		if st.Kind != api.KindOAuth || st.Label != rec.Label {
			continue
		}
		for _, p := range st.Parks {
			if p.Kind == api.ParkRelogin {
				return st.ID
			}
		}
	}
	return ""
}

// RemoveCredential implements admin.Backend.
func (c *core) RemoveCredential(ctx context.Context, id string) error {
	if _, ok := c.record(id); !ok {
		return api.ErrNotFound
	}
	c.mu.Lock()
	c.creds = slices.DeleteFunc(c.creds, func(r CredentialRecord) bool { return r.ID == id })
	recs := slices.Clone(c.creds)
	c.mu.Unlock()
	if c.store != nil {
		if err := c.store.saveCreds(recs); err != nil {
			return err
		}
	}
	c.pool.Remove(id)
	if c.onRemove != nil {
		c.onRemove(id)
	}
	if keys, err := c.keys(); err == nil {
		if err := keys.Delete(SecretKey(id)); err != nil && !isNotFound(err) {
			c.logf("warning: credential %s removed, but its secret could not be deleted from the keychain: %v", id, err)
		}
	}
	return c.saveState()
}

func (c *core) Pause(ctx context.Context, id string) error  { return c.poolOp(id, c.pool.Pause) }
func (c *core) Resume(ctx context.Context, id string) error { return c.poolOp(id, c.pool.Resume) }
func (c *core) Reset(ctx context.Context, id string) error  { return c.poolOp(id, c.pool.Reset) }

func (c *core) poolOp(id string, op func(string) error) error {
	if err := op(id); err != nil {
		return api.ErrNotFound
	}
	return c.saveState()
}

// StartLogin implements admin.Backend.
func (c *core) StartLogin(ctx context.Context, provider, label string) (api.LoginStart, error) {
	return startBrowserLogin(c.cfg, provider, label, c.AddCredential, c.logf, &c.logins)
}

// SecretKey is the keychain name of credential id's secret.
func SecretKey(id string) string { return "cred:" + id }

const clientKeyName = "client-key"

func newCredID(provider string) string {
	b := make([]byte, 3)
	rand.Read(b)
	return provider + "-" + hex.EncodeToString(b)
}

func isNotFound(err error) bool {
	return err != nil && (err == keychain.ErrNotFound || strings.Contains(err.Error(), keychain.ErrNotFound.Error()))
}

// Reserve implements admin.Backend.
func (c *core) Reserve(ctx context.Context, id string, percent int) error {
	if err := c.pool.SetReserve(id, percent); err != nil {
		if errors.Is(err, pool.ErrUnknown) {
			return api.ErrNotFound
		}
		return fmt.Errorf("%w: %v", api.ErrBadRequest, err)
	}
	return c.saveState()
}
