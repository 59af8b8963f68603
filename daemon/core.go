package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/egress"
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
	store  files                          // noFiles for the demo, which keeps nothing
	pool   *pool.Pool
	events api.Emitter
	logf   func(string, ...any)
	listen string
	start  time.Time
	// onRemove lets the authenticator drop a removed credential's cached
	// secret.
	onRemove func(id string)

	addMu sync.Mutex // serializes AddCredential's duplicate check and add
	mu    sync.Mutex
	creds []CredentialRecord
	// subs is [subscriptions] as last loaded: the logins config.toml
	// opens to every tool.
	subs config.Subscriptions

	// proxies are the credentials' own egress proxies (egress.go);
	// loginClient carries a login started from the tray (nil: a default
	// client).
	proxies     *credProxies
	loginClient *http.Client

	logins browserLogins // the tray's logins in progress (login_pending.go)
}

func newCore(cfg config.Config, clk clock.Clock, keys func() (keychain.Store, error), store files, em api.Emitter, logf func(string, ...any)) *core {
	c := &core{cfg: cfg, clk: clk, keys: keys, store: store, events: em, logf: logf, listen: cfg.Listen, start: clk.Now(),
		subs: cfg.Subscriptions, proxies: &credProxies{}}
	c.pool = pool.New(clk, pool.Config{Ladder: cfg.Ladder, ResetAfter: cfg.ResetAfter, MaxInFlight: cfg.MaxInFlight}, em)
	for _, name := range cfg.ProviderNames() {
		c.pool.SetProvider(name, cfg.Providers[name].LimitScope)
	}
	return c
}

// load restores credentials and pool state from the home.
func (c *core) load() error {
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
		c.proxies.set(r.ID, r.Proxy)
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
		MaxInFlight: c.cfg.Providers[r.Provider].MaxInFlight, OtherTools: opened, Egress: egress.Redact(r.Proxy)}
}

// editRecord changes credential id's record with edit and saves
// credentials.json, putting the record back when the save fails. It
// returns the record as edited, and whether edit changed anything that
// was saved.
func (c *core) editRecord(id string, edit func(*CredentialRecord)) (CredentialRecord, bool, error) {
	c.mu.Lock()
	i := slices.IndexFunc(c.creds, func(r CredentialRecord) bool { return r.ID == id })
	if i < 0 {
		c.mu.Unlock()
		return CredentialRecord{}, false, api.ErrNotFound
	}
	was := c.creds[i]
	edit(&c.creds[i])
	rec, recs := c.creds[i], slices.Clone(c.creds)
	c.mu.Unlock()
	if rec == was {
		return rec, false, nil
	}
	if err := c.store.saveCreds(recs); err != nil {
		c.mu.Lock()
		if i := slices.IndexFunc(c.creds, func(r CredentialRecord) bool { return r.ID == id }); i >= 0 {
			c.creds[i] = was
		}
		c.mu.Unlock()
		return was, false, err
	}
	return rec, true, nil
}

// saveState writes the pool's state file.
func (c *core) saveState() error {
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
	if _, err := egress.Parse(req.Proxy); err != nil {
		return CredentialRecord{}, "", bad("--proxy: %v", err)
	}
	b, _ := json.Marshal(secret)
	rec := CredentialRecord{ID: newCredID(req.Provider), Provider: req.Provider, Label: label, Kind: req.Kind, Source: req.Source, Added: c.clk.Now().UTC(),
		Proxy: strings.TrimSpace(req.Proxy)}
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
			// A login refused for its location comes back the same way,
			// with the --proxy it was given this time.
			if p.Kind == api.ParkRelogin || p.Kind == api.ParkRegion && rec.Proxy != "" {
				return st.ID
			}
		}
	}
	return ""
}

func (c *core) poolOp(id string, op func(string) error) error {
	if err := op(id); err != nil {
		return api.ErrNotFound
	}
	return c.saveState()
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
