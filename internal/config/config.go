// Package config reads, validates and writes the home's config.toml. Every
// value is checked at start; a bad one is a one-line error naming its key,
// because a proxy that starts with a half-understood config fails later, in
// the middle of somebody's request.
package config

import (
	"slices"

	"errors"
	"fmt"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/pool"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// FileName is the config file inside the home.
const FileName = "config.toml"

// Built-in providers: the three subscriptions and their API keys.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
	Google    = "google"
)

// Upper bounds that keep a typo ("5000h") from turning into a proxy that
// never answers.
const (
	maxCapacityWait = time.Hour
	maxLadderStep   = 24 * time.Hour
)

// Config is the validated configuration.
type Config struct {
	Listen           string
	AllowRemote      bool
	RequireClientKey bool
	AllowOrigins     []string
	MaxBody          int64
	KeychainBackend  string

	Providers map[string]Provider

	Ladder     []time.Duration
	ResetAfter time.Duration

	SoleProviderMax time.Duration
	CapacityMax     time.Duration

	TransientBackoff []time.Duration
	MaxAttempts      int
	MaxInFlight      int
	HeaderTimeout    time.Duration
	// FirstEventTimeout and IdleTimeout are the stream deadlines of
	// [retry] (policy.Config); 0 turns one off.
	FirstEventTimeout time.Duration
	IdleTimeout       time.Duration

	Fallback Fallback
	// Models are the aliases of [models] (models.go).
	Models Aliases

	History History
	// Prices override the built-in per-model prices used to estimate what
	// API-key requests cost (history.DefaultPrices), by model name.
	Prices map[string]Price

	Usage Usage

	// Subscriptions is [subscriptions]: which tools a login serves.
	Subscriptions Subscriptions

	// fileKeys are the keys the file set (FileKeys).
	fileKeys []string
	// Network is [network]: the egress proxy (network.go).
	Network Network
	// Update is [update] (update.go).
	Update Update
}

// Subscriptions is [subscriptions]. By default a subscription login serves
// the tool it belongs to (api.SubscriptionTool: a Claude login Claude
// Code, a Google login Gemini CLI); other tools' requests go to API keys
// or through fallback.
type Subscriptions struct {
	// OtherTools names logins, by credential ID or label, that serve every
	// tool, as `subpool tools ID all` opens one.
	OtherTools []string
}

// OpensToOthers reports whether [subscriptions] other_tools names the
// credential with this id or label.
func (s Subscriptions) OpensToOthers(id, label string) bool {
	for _, n := range s.OtherTools {
		if n == id || n == label {
			return true
		}
	}
	return false
}

// Usage is [usage]: the subscriptions' quota windows.
type Usage struct {
	// Poll is how often an idle OAuth login's usage endpoint is asked;
	// 0 never.
	Poll time.Duration
	// WarnAt is the percent of a window that brings one warning.
	WarnAt int
	// Reserve is the percent of every subscription's binding window kept
	// for the person's own use; subpool reserve overrides it per login.
	Reserve int
	// AllowExtraUsage keeps a Claude subscription serving once its
	// requests draw on paid extra usage.
	AllowExtraUsage bool
}

// History is [history]: the request history in history.db.
type History struct {
	Enabled bool
	Days    int // rows older than this are deleted
}

// Price is USD per million tokens. Input is uncached prompt tokens;
// CacheRead and CacheWrite are prompt tokens read from or written to the
// provider's prompt cache.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// Provider is one pool's upstream.
type Provider struct {
	Name           string
	Wire           string // "anthropic", "openai" or "gemini"
	BaseURL        string
	ChatGPTBaseURL string // openai only: where ChatGPT logins go
	// CodeAssistURL is google only: where Google logins go (the Code
	// Assist API Gemini CLI's "Login with Google" uses); keys go to
	// BaseURL, the Gemini API.
	CodeAssistURL string
	TokenURL      string // OAuth refresh endpoint
	AuthorizeURL  string // OAuth login page; "" = the built-in default
	RedirectURI   string // OAuth callback; "" = the built-in default (port 0: any free port, for tests)
	UsageURL      string // polled for idle OAuth logins' windows (built-ins only; "" = never)
	LimitScope    string // "credential" or "egress"
	MaxInFlight   int
	Builtin       bool
	// ChatOnly: wire = "openai-chat", an OpenAI-compatible upstream that
	// serves only Chat Completions (DeepSeek, Ollama, vLLM). Wire is then
	// "openai", which is what every reader of it needs; the proxy
	// translates a Responses client's requests to Chat Completions.
	ChatOnly bool
}

// Default returns the configuration a fresh home starts with. The
// engine's defaults are its packages' own (policy.Defaults, the pool's
// ladder), written once there.
func Default() Config {
	pol := policy.Defaults()
	return Config{
		Listen:           "127.0.0.1:8787",
		RequireClientKey: true,
		MaxBody:          policy.DefaultMaxBody,
		KeychainBackend:  "os",
		Providers: map[string]Provider{
			Anthropic: {
				Name: Anthropic, Wire: "anthropic", Builtin: true,
				BaseURL:  "https://api.anthropic.com",
				TokenURL: "https://platform.claude.com/v1/oauth/token",
				// Claude Code's claude.ai login page (internal/oauth checks it
				// against the installed Claude Code).
				AuthorizeURL: "https://claude.com/cai/oauth/authorize",
				UsageURL:     "https://api.anthropic.com/api/oauth/usage",
				LimitScope:   "credential",
			},
			OpenAI: {
				Name: OpenAI, Wire: "openai", Builtin: true,
				BaseURL:        "https://api.openai.com",
				ChatGPTBaseURL: "https://chatgpt.com/backend-api/codex",
				TokenURL:       "https://auth.openai.com/oauth/token",
				AuthorizeURL:   "https://auth.openai.com/oauth/authorize",
				UsageURL:       "https://chatgpt.com/backend-api/wham/usage",
				LimitScope:     "credential",
			},
			Google: {
				Name: Google, Wire: "gemini", Builtin: true,
				BaseURL:       "https://generativelanguage.googleapis.com",
				CodeAssistURL: "https://cloudcode-pa.googleapis.com",
				// Gemini CLI's installed-app login (internal/oauth checks it
				// against the installed Gemini CLI).
				TokenURL:     "https://oauth2.googleapis.com/token",
				AuthorizeURL: "https://accounts.google.com/o/oauth2/v2/auth",
				// The login's quota is read from Code Assist's
				// retrieveUserQuota, beside the endpoint it serves.
				UsageURL:   "https://cloudcode-pa.googleapis.com/v1internal:retrieveUserQuota",
				LimitScope: "credential",
			},
		},
		Ladder:           slices.Clone(pool.DefaultLadder),
		ResetAfter:       pool.DefaultResetAfter,
		SoleProviderMax:  pol.SoleProviderMax,
		CapacityMax:      pol.CapacityMax,
		TransientBackoff: pol.TransientBackoff,
		MaxAttempts:      pol.MaxAttempts,
		HeaderTimeout:    10 * time.Minute,
		Fallback:         DefaultFallback(),
		History:          History{Enabled: true, Days: 90},
		Usage:            Usage{Poll: 5 * time.Minute, WarnAt: 90},
		Update:           Update{Feed: DefaultFeed, Check: true},

		FirstEventTimeout: pol.FirstEventTimeout,
		IdleTimeout:       pol.IdleTimeout,
	}
}

// file mirrors config.toml. Durations stay strings here so that a bad one
// can be reported with its key instead of a decoder position.
type file struct {
	Listen           *string   `toml:"listen"`
	AllowRemote      *bool     `toml:"allow_remote"`
	RequireClientKey *bool     `toml:"require_client_key"`
	AllowOrigins     []string  `toml:"allow_origins"`
	MaxBody          any       `toml:"max_body"`
	Keychain         *keychain `toml:"keychain"`
	Providers        map[string]providerFile
	Cooldown         *cooldownFile        `toml:"cooldown"`
	Wait             *waitFile            `toml:"wait"`
	Retry            *retryFile           `toml:"retry"`
	Fallback         fallbackFile         `toml:"fallback"` // read by parseFallback
	Models           modelsFile           `toml:"models"`   // read by parseModels
	History          *historyFile         `toml:"history"`
	Prices           map[string]priceFile `toml:"prices"`
	Usage            *usageFile           `toml:"usage"`
	Subscriptions    *subscriptionsFile   `toml:"subscriptions"`
	Network          *networkFile         `toml:"network"`
	Update           *updateFile          `toml:"update"`
}

type cooldownFile struct {
	Ladder     []string `toml:"ladder"`
	ResetAfter *string  `toml:"reset_after"`
}

type waitFile struct {
	SoleProviderMax *string `toml:"sole_provider_max"`
	CapacityMax     *string `toml:"capacity_max"`
}

type retryFile struct {
	Transient     []string `toml:"transient"`
	MaxAttempts   *int     `toml:"max_attempts"`
	MaxInFlight   *int     `toml:"max_in_flight"`
	HeaderTimeout *string  `toml:"header_timeout"`
	FirstEvent    *string  `toml:"first_event_timeout"`
	Idle          *string  `toml:"idle_timeout"`
}

type historyFile struct {
	Enabled *bool `toml:"enabled"`
	Days    *int  `toml:"days"`
}

type usageFile struct {
	Poll            *string `toml:"poll"`
	WarnAt          *int    `toml:"warn_at"`
	Reserve         *int    `toml:"reserve"`
	AllowExtraUsage *bool   `toml:"allow_extra_usage"`
}

type subscriptionsFile struct {
	OtherTools []string `toml:"other_tools"`
}

type priceFile struct {
	Input      *float64 `toml:"input"`
	Output     *float64 `toml:"output"`
	CacheRead  *float64 `toml:"cache_read"`
	CacheWrite *float64 `toml:"cache_write"`
}

type keychain struct {
	Backend *string `toml:"backend"`
}

type providerFile struct {
	Wire           *string `toml:"wire"`
	BaseURL        *string `toml:"base_url"`
	ChatGPTBaseURL *string `toml:"chatgpt_base_url"`
	CodeAssistURL  *string `toml:"code_assist_url"`
	TokenURL       *string `toml:"token_url"`
	AuthorizeURL   *string `toml:"authorize_url"`
	RedirectURI    *string `toml:"redirect_uri"`
	UsageURL       *string `toml:"usage_url"`
	LimitScope     *string `toml:"limit_scope"`
	MaxInFlight    *int    `toml:"max_in_flight"`
}

// Error is a config problem tied to one key.
type Error struct {
	Path string
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Path, e.Key, e.Msg)
}

// Load reads path; a missing file is created with the commented defaults.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := WriteDefault(path); err != nil {
			return Config{}, err
		}
		return Default(), nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("%s: cannot read: %v", path, err)
	}
	c, err := Parse(path, b)
	if err == nil && strings.TrimSpace(string(b)) == "" {
		// subpool never writes an empty file: one is a file cut short (a
		// full disk, a crashed editor), and starting on it would quietly
		// use every default (issue 43). A file of comments alone was
		// written on purpose.
		return Config{}, &Error{Path: path, Msg: "the file is empty (cut short?): restore it, or delete it and subpool writes the commented defaults"}
	}
	return c, err
}

// Read is Load without creating anything: a missing file means defaults.
func Read(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("%s: cannot read: %v", path, err)
	}
	return Parse(path, b)
}

// Parse validates the TOML text b; path is only used in messages.
func Parse(path string, b []byte) (Config, error) {
	var f file
	md, err := toml.Decode(string(b), &f)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return Config{}, &Error{Path: path, Msg: fmt.Sprintf("line %d: %s", perr.Position.Line, firstLine(perr.Message))}
		}
		return Config{}, &Error{Path: path, Msg: firstLine(err.Error())}
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Config{}, &Error{Path: path, Key: und[0].String(), Msg: "unknown key (check the spelling; see the comments in a fresh config.toml)"}
	}
	c := Default()
	bad := badKey(func(key, format string, a ...any) error {
		return &Error{Path: path, Key: key, Msg: fmt.Sprintf(format, a...)}
	})
	// [providers.*] comes before [fallback] and [models], which name
	// providers.
	if err := parseTop(f, &c, bad); err != nil {
		return Config{}, err
	}
	if err := parseKeychain(f.Keychain, &c, bad); err != nil {
		return Config{}, err
	}
	if err := parseProviders(f.Providers, c.Providers, bad); err != nil {
		return Config{}, err
	}
	if err := parseCooldown(f.Cooldown, &c, bad); err != nil {
		return Config{}, err
	}
	if err := parseWait(f.Wait, &c, bad); err != nil {
		return Config{}, err
	}
	if err := parseRetry(f.Retry, &c, bad); err != nil {
		return Config{}, err
	}
	if c.Fallback, err = parseFallback(f.Fallback, c.Providers, bad); err != nil {
		return Config{}, err
	}
	if c.Models, err = parseModels(f.Models, c.Providers, bad); err != nil {
		return Config{}, err
	}
	if err := parseHistory(f.History, &c.History, bad); err != nil {
		return Config{}, err
	}
	if err := parsePrices(f.Prices, &c, bad); err != nil {
		return Config{}, err
	}
	if err := parseUsage(f.Usage, &c.Usage, bad); err != nil {
		return Config{}, err
	}
	if err := parseSubscriptions(f.Subscriptions, &c.Subscriptions, bad); err != nil {
		return Config{}, err
	}
	c.fileKeys = setKeys(md)
	if err := parseNetwork(f.Network, &c.Network, bad); err != nil {
		return Config{}, err
	}
	if err := parseUpdate(f.Update, &c.Update, bad); err != nil {
		return Config{}, err
	}
	return c, nil
}

// badKey makes the error for one key; Parse binds it to the file's path.
type badKey func(key, format string, a ...any) error

// parseTop reads the keys above the first table.
func parseTop(f file, c *Config, bad badKey) error {
	if f.Listen != nil {
		c.Listen = *f.Listen
	}
	if f.AllowRemote != nil {
		c.AllowRemote = *f.AllowRemote
	}
	if f.RequireClientKey != nil {
		c.RequireClientKey = *f.RequireClientKey
	}
	if err := checkListen(c.Listen, c.AllowRemote, c.RequireClientKey); errors.Is(err, errOpenRemote) {
		return bad("allow_remote", "%s", err)
	} else if err != nil {
		return bad("listen", "%s", err)
	}
	for i, o := range f.AllowOrigins {
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" {
			return bad(fmt.Sprintf("allow_origins[%d]", i), "%q is not an origin (use scheme://host[:port], e.g. \"http://localhost:3000\")", o)
		}
	}
	c.AllowOrigins = f.AllowOrigins
	if f.MaxBody != nil {
		n, err := parseSize(f.MaxBody)
		if err != nil {
			return bad("max_body", "%s", err)
		}
		c.MaxBody = n
	}
	return nil
}

func parseKeychain(k *keychain, c *Config, bad badKey) error {
	if k == nil || k.Backend == nil {
		return nil
	}
	switch *k.Backend {
	case "os", "file":
		c.KeychainBackend = *k.Backend
		return nil
	}
	return bad("keychain.backend", "%q is not a backend (use \"os\" or \"file\")", *k.Backend)
}

// parseProviders reads [providers.*] over the built-ins in provs, in name
// order, so that the first bad provider is always the same one.
func parseProviders(pfs map[string]providerFile, provs map[string]Provider, bad badKey) error {
	names := make([]string, 0, len(pfs))
	for n := range pfs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		p, err := parseProvider(name, pfs[name], provs, bad)
		if err != nil {
			return err
		}
		provs[name] = p
	}
	return nil
}

func parseProvider(name string, pf providerFile, provs map[string]Provider, bad badKey) (Provider, error) {
	key := "providers." + name
	if !ValidName(name) {
		return Provider{}, bad(key, "provider names use lower-case letters, digits, '-' and '_'")
	}
	if reservedName(name) {
		return Provider{}, bad(key, "%q is a path subpool routes itself (/%s/...), so no request could reach this provider: choose another name", name, name)
	}
	p, builtin := provs[name]
	if !builtin {
		p = Provider{Name: name, LimitScope: "credential"}
	}
	if pf.Wire != nil {
		if builtin && *pf.Wire != p.Wire {
			return Provider{}, bad(key+".wire", "the built-in %s provider speaks %q; define a custom provider under another name", name, p.Wire)
		}
		p.Wire = *pf.Wire
	}
	if p.Wire == "openai-chat" {
		p.Wire, p.ChatOnly = "openai", true
	}
	if p.Wire != "anthropic" && p.Wire != "openai" && p.Wire != "gemini" {
		return Provider{}, bad(key+".wire", "must be \"anthropic\", \"openai\", \"openai-chat\" (an upstream that serves only Chat Completions) or \"gemini\" (which API shape the provider speaks)")
	}
	for _, u := range []struct {
		k   string
		src *string
		dst *string
	}{
		{"base_url", pf.BaseURL, &p.BaseURL},
		{"chatgpt_base_url", pf.ChatGPTBaseURL, &p.ChatGPTBaseURL},
		{"code_assist_url", pf.CodeAssistURL, &p.CodeAssistURL},
		{"token_url", pf.TokenURL, &p.TokenURL},
		{"authorize_url", pf.AuthorizeURL, &p.AuthorizeURL},
		{"redirect_uri", pf.RedirectURI, &p.RedirectURI},
		{"usage_url", pf.UsageURL, &p.UsageURL},
	} {
		if u.src == nil {
			continue
		}
		if err := checkURL(*u.src); err != nil {
			return Provider{}, bad(key+"."+u.k, "%s", err)
		}
		*u.dst = strings.TrimRight(*u.src, "/")
	}
	if p.BaseURL == "" {
		return Provider{}, bad(key+".base_url", "missing: where does %s answer? e.g. \"https://api.z.ai/api/anthropic\"", name)
	}
	if pf.UsageURL != nil && !builtin {
		return Provider{}, bad(key+".usage_url", "only the built-in anthropic, openai and google subscriptions have a usage endpoint")
	}
	if pf.UsageURL == nil && builtin {
		// Beside the endpoints it was not told about, so a base URL
		// pointed at a test server or a gateway is not polled behind
		// its back at the real host.
		p.UsageURL = defaultUsageURL(p)
	}
	if pf.LimitScope != nil {
		switch *pf.LimitScope {
		case "credential", "egress":
			p.LimitScope = *pf.LimitScope
		default:
			return Provider{}, bad(key+".limit_scope", "%q: use \"credential\" (each key has its own limit) or \"egress\" (one 429 cools every credential)", *pf.LimitScope)
		}
	}
	if pf.MaxInFlight != nil {
		if *pf.MaxInFlight < 0 {
			return Provider{}, bad(key+".max_in_flight", "must be 0 (no limit) or more")
		}
		p.MaxInFlight = *pf.MaxInFlight
	}
	return p, nil
}

func parseCooldown(cf *cooldownFile, c *Config, bad badKey) error {
	if cf == nil {
		return nil
	}
	if cf.Ladder != nil {
		if len(cf.Ladder) == 0 {
			return bad("cooldown.ladder", "needs at least one step, e.g. [\"30s\", \"60s\", \"5m\"]")
		}
		l, err := durations("cooldown.ladder", cf.Ladder, func(d time.Duration) bool { return d > 0 && d <= maxLadderStep }, "between 1s and 24h", bad)
		if err != nil {
			return err
		}
		c.Ladder = l
	}
	if cf.ResetAfter != nil {
		d, err := checkedDuration("cooldown.reset_after", *cf.ResetAfter, positive, "positive", bad)
		if err != nil {
			return err
		}
		c.ResetAfter = d
	}
	return nil
}

func parseWait(wf *waitFile, c *Config, bad badKey) error {
	if wf == nil {
		return nil
	}
	if s := wf.SoleProviderMax; s != nil {
		d, err := checkedDuration("wait.sole_provider_max", *s, func(d time.Duration) bool { return d >= 0 }, "0 (never wait) or more", bad)
		if err != nil {
			return err
		}
		c.SoleProviderMax = d
	}
	if s := wf.CapacityMax; s != nil {
		d, err := checkedDuration("wait.capacity_max", *s, func(d time.Duration) bool { return d >= 0 }, "0 (off) or more", bad)
		if err != nil {
			return err
		}
		// Documented normalisation rather than an error: more than an
		// hour is capped, since no client keeps a request open that long.
		c.CapacityMax = min(d, maxCapacityWait)
	}
	return nil
}

func parseRetry(rf *retryFile, c *Config, bad badKey) error {
	if rf == nil {
		return nil
	}
	if rf.Transient != nil {
		t, err := durations("retry.transient", rf.Transient, func(d time.Duration) bool { return d >= 0 && d <= time.Minute }, "between 0s and 1m", bad)
		if err != nil {
			return err
		}
		c.TransientBackoff = t
	}
	if n := rf.MaxAttempts; n != nil {
		if *n < 1 || *n > 100 {
			return bad("retry.max_attempts", "must be between 1 and 100")
		}
		c.MaxAttempts = *n
	}
	if n := rf.MaxInFlight; n != nil {
		if *n < 0 {
			return bad("retry.max_in_flight", "must be 0 (no limit) or more")
		}
		c.MaxInFlight = *n
	}
	if s := rf.HeaderTimeout; s != nil {
		d, err := checkedDuration("retry.header_timeout", *s, positive, "positive", bad)
		if err != nil {
			return err
		}
		c.HeaderTimeout = d
	}
	return parseDeadlines(rf, c, bad)
}

// parseDeadlines reads [retry]'s stream deadlines: 0 is none, negative
// is refused (it would read as none).
func parseDeadlines(rf *retryFile, c *Config, bad badKey) error {
	for _, k := range []struct {
		key string
		s   *string
		to  *time.Duration
	}{{"retry.first_event_timeout", rf.FirstEvent, &c.FirstEventTimeout}, {"retry.idle_timeout", rf.Idle, &c.IdleTimeout}} {
		if k.s == nil {
			continue
		}
		d, err := checkedDuration(k.key, *k.s, func(d time.Duration) bool { return d >= 0 }, "0s (no deadline) or more", bad)
		if err != nil {
			return err
		}
		*k.to = d
	}
	return nil
}

func parseHistory(hf *historyFile, h *History, bad badKey) error {
	if hf == nil {
		return nil
	}
	if hf.Enabled != nil {
		h.Enabled = *hf.Enabled
	}
	if hf.Days != nil {
		if *hf.Days < 1 || *hf.Days > 3650 {
			return bad("history.days", "must be between 1 and 3650")
		}
		h.Days = *hf.Days
	}
	return nil
}

func parseUsage(uf *usageFile, u *Usage, bad badKey) error {
	if uf == nil {
		return nil
	}
	if uf.Poll != nil {
		// Faster than the upstream refreshes its counters is only load on
		// its endpoint; slower than a day is stale.
		d, err := checkedDuration("usage.poll", *uf.Poll, func(d time.Duration) bool {
			return d == 0 || d >= 30*time.Second && d <= 24*time.Hour
		}, "0 (never poll) or between 30s and 24h", bad)
		if err != nil {
			return err
		}
		u.Poll = d
	}
	if n := uf.WarnAt; n != nil {
		if *n < 1 || *n > 100 {
			return bad("usage.warn_at", "%d: must be a percent between 1 and 100", *n)
		}
		u.WarnAt = *n
	}
	if n := uf.Reserve; n != nil {
		if *n < 0 || *n > 99 {
			return bad("usage.reserve", "%d: must be a percent between 0 (off) and 99", *n)
		}
		u.Reserve = *n
	}
	if uf.AllowExtraUsage != nil {
		u.AllowExtraUsage = *uf.AllowExtraUsage
	}
	return nil
}

func parseSubscriptions(sf *subscriptionsFile, s *Subscriptions, bad badKey) error {
	if sf == nil {
		return nil
	}
	for i, name := range sf.OtherTools {
		name = strings.TrimSpace(name)
		if name == "" || len(name) > 64 || strings.ContainsAny(name, "\n\r\t") {
			return bad(fmt.Sprintf("subscriptions.other_tools[%d]", i), "%q: name a login by its ID or label, as `subpool list` shows them", sf.OtherTools[i])
		}
		s.OtherTools = append(s.OtherTools, name)
	}
	return nil
}

func positive(d time.Duration) bool { return d > 0 }

// checkedDuration parses s as the value of key; a duration that ok refuses
// is an error saying it must be rule.
func checkedDuration(key, s string, ok func(time.Duration) bool, rule string, bad badKey) (time.Duration, error) {
	d, err := duration(s)
	if err == nil && !ok(d) {
		err = fmt.Errorf("%q must be %s", s, rule)
	}
	if err != nil {
		return 0, bad(key, "%s", err)
	}
	return d, nil
}

// durations parses a list of durations, each checked as checkedDuration
// does and named by its index.
func durations(key string, ss []string, ok func(time.Duration) bool, rule string, bad badKey) ([]time.Duration, error) {
	out := make([]time.Duration, 0, len(ss))
	for i, s := range ss {
		d, err := checkedDuration(fmt.Sprintf("%s[%d]", key, i), s, ok, rule, bad)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func parsePrices(pf map[string]priceFile, c *Config, bad badKey) error {
	models := make([]string, 0, len(pf))
	for m := range pf {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		p := pf[m]
		key := fmt.Sprintf("prices.%q", m)
		if p.Input == nil || p.Output == nil {
			return bad(key, "needs input and output (USD per million tokens), e.g. { input = 3.0, output = 15.0 }")
		}
		var out Price
		for _, v := range []struct {
			k   string
			src *float64
			dst *float64
		}{{"input", p.Input, &out.Input}, {"output", p.Output, &out.Output}, {"cache_read", p.CacheRead, &out.CacheRead}, {"cache_write", p.CacheWrite, &out.CacheWrite}} {
			if v.src == nil {
				continue
			}
			if *v.src < 0 || *v.src > 10000 {
				return bad(key+"."+v.k, "%v: must be between 0 and 10000 USD per million tokens", *v.src)
			}
			*v.dst = *v.src
		}
		if c.Prices == nil {
			c.Prices = map[string]Price{}
		}
		c.Prices[m] = out
	}
	return nil
}

// defaultUsageURL is where a built-in provider's usage endpoint sits:
// Claude's under its API base, ChatGPT's in the backend API beside the
// Codex path.
func defaultUsageURL(p Provider) string {
	switch p.Name {
	case Anthropic:
		return p.BaseURL + "/api/oauth/usage"
	case OpenAI:
		return strings.TrimSuffix(p.ChatGPTBaseURL, "/codex") + "/wham/usage"
	case Google:
		return p.CodeAssistURL + "/v1internal:retrieveUserQuota"
	}
	return ""
}

// ProviderNames lists providers in a stable order: built-ins first.
func (c Config) ProviderNames() []string {
	var names []string
	for n := range c.Providers {
		if n != Anthropic && n != OpenAI && n != Google {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return append([]string{Anthropic, OpenAI, Google}, names...)
}

// CheckListen is exported for --listen flags, which bypass the file.
func CheckListen(addr string, allowRemote, requireKey bool) error {
	return checkListen(addr, allowRemote, requireKey)
}

func checkListen(addr string, allowRemote, requireKey bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. \"127.0.0.1:8787\")", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q has no valid port", addr)
	}
	// allow_remote opens the Host guard whatever the address: a loopback
	// listener behind an SSH tunnel or a port forward is reached from
	// other machines too (issue 43: Host evil.com with no key was served).
	if allowRemote && !requireKey {
		return errOpenRemote
	}
	if IsLoopback(host) || allowRemote {
		return nil
	}
	return fmt.Errorf("%q is not a loopback address; subpool listens on 127.0.0.1 unless allow_remote = true", addr)
}

var errOpenRemote = errors.New("allow_remote = true lets requests for any Host in, so require_client_key must stay true: set require_client_key = true, or allow_remote = false")

// IsLoopback reports whether host (no port) is a loopback name or address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}

// duration refuses a negative value for every key: no setting counts
// backwards, and a "-5m" that quietly meant "off" (issue 43: capacity_max)
// hides a typo. A key that can be turned off says so with 0.
func duration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (use Go syntax like \"30s\", \"5m\", \"1h30m\")", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative: durations are 0 or more (\"0s\" turns off what can be off)", s)
	}
	return d, nil
}

// parseSize takes a byte count or a string like "32MiB", "512KB".
func parseSize(v any) (int64, error) {
	const hint = "use a byte count or a size like \"32MiB\""
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case string:
		s := strings.TrimSpace(x)
		mult := int64(1)
		for _, u := range []struct {
			suf string
			m   int64
		}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
			if strings.HasSuffix(s, u.suf) {
				s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suf)), u.m
				break
			}
		}
		f, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %s", x, hint)
		}
		n = f * mult
	default:
		return 0, fmt.Errorf("%v: %s", v, hint)
	}
	if n < 1024 || n > 1<<30 {
		return 0, fmt.Errorf("%d bytes: must be between 1KiB and 1GiB", n)
	}
	return n, nil
}

// ValidName reports whether s may name a provider or a client: 1 to 40
// lower-case letters, digits, '-' and '_'.
func ValidName(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// reservedName reports whether a provider called name could never be
// reached at /NAME/...: the proxy routes /v1/, /v1beta/ and /v1alpha/ (the
// Gemini API's versions) to the built-in pools and any path starting
// /v1internal to Code Assist before it reads a provider's name
// (proxy.route), and the daemon hands
// /subpool/v1/ to the admin API (every Anthropic and OpenAI route of a
// provider called subpool).
func reservedName(name string) bool {
	return name == "v1" || name == "v1beta" || name == "v1alpha" || name == "subpool" || strings.HasPrefix(name, "v1internal")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// WriteDefault writes the commented default config to path atomically; it
// never overwrites an existing file.
func WriteDefault(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("cannot create %s: %v", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", path, err)
	}
	if _, err := f.WriteString(DefaultText); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("cannot write %s: %v", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// DefaultText is the config.toml a fresh home gets: every key with its
// default and what it interacts with.
const DefaultText = `# subpool configuration. Durations use Go syntax: "30s", "5m", "1h30m".
# A bad value stops the start with a message naming the key.

# Where the proxy listens. Loopback only unless allow_remote = true, and then
# require_client_key must stay true.
listen = "127.0.0.1:8787"
allow_remote = false

# Clients send the client key (subpool env shell prints it) as x-api-key or
# Authorization: Bearer. Turning this off lets any local program spend your
# subscriptions.
require_client_key = true

# Browser origins allowed to call the proxy (e.g. a web IDE on localhost).
# Every other request carrying an Origin or Referer is refused.
allow_origins = []

# Largest request body accepted; larger ones get a 413.
max_body = "32MiB"

[keychain]
# "os": the OS keychain (Secret Service, macOS Keychain, Windows Credential
# Manager). "file": a 0600 file in this folder, for headless boxes without a
# keychain; subpool warns at every start.
backend = "os"

[providers.anthropic]
base_url  = "https://api.anthropic.com"
# OAuth refresh endpoint for Claude subscriptions. It has moved before.
token_url = "https://platform.claude.com/v1/oauth/token"
# Where "subpool login anthropic" sends the browser: Claude Code's claude.ai
# login page. redirect_uri overrides the callback (default: a free port).
authorize_url = "https://claude.com/cai/oauth/authorize"
# Asked for an idle Claude login's 5h and weekly windows ([usage] poll);
# by default base_url + "/api/oauth/usage".
# usage_url = "https://api.anthropic.com/api/oauth/usage"
# max_in_flight = 0                 # concurrent requests per credential, 0 = no limit

[providers.openai]
base_url         = "https://api.openai.com"
chatgpt_base_url = "https://chatgpt.com/backend-api/codex"
token_url        = "https://auth.openai.com/oauth/token"
# Where "subpool login openai" sends the browser. Its callback is Codex's
# registered http://localhost:1455/auth/callback, or 1457 when 1455 is taken;
# redirect_uri overrides it.
authorize_url    = "https://auth.openai.com/oauth/authorize"
# Asked for an idle ChatGPT login's windows; by default beside the Codex
# path of chatgpt_base_url.
# usage_url      = "https://chatgpt.com/backend-api/wham/usage"

[providers.google]
# Gemini API keys go to base_url; Google logins (Gemini CLI's "Login with
# Google") to the Code Assist API at code_assist_url.
base_url        = "https://generativelanguage.googleapis.com"
code_assist_url = "https://cloudcode-pa.googleapis.com"
token_url       = "https://oauth2.googleapis.com/token"
# Where "subpool login google" sends the browser (callback: a free port).
authorize_url   = "https://accounts.google.com/o/oauth2/v2/auth"
# Asked for an idle Google login's per-model quota; by default beside
# code_assist_url.
# usage_url     = "https://cloudcode-pa.googleapis.com/v1internal:retrieveUserQuota"

# Any number of custom providers that speak the Anthropic, OpenAI or Gemini API.
# Clients reach them under /NAME/v1/..., e.g. http://127.0.0.1:8787/zai/v1/messages.
# [providers.zai]
# wire        = "anthropic"         # or "openai", "gemini"
# base_url    = "https://api.z.ai/api/anthropic"
# limit_scope = "credential"        # or "egress": one 429 cools every credential of it

[cooldown]
# Stepped cooldown after a rate limit with no reset time: 1st hit, 2nd, 3rd
# and later. When the upstream says when the limit resets, that time is used.
ladder      = ["30s", "60s", "5m"]
# A credential with no hit for this long starts the ladder over.
reset_after = "10m"

[wait]
# When every credential is cooling, wait in the request for the first one to
# be ready if that is at most this long; otherwise answer 429 at once.
sole_provider_max = "2m"
# Wall-clock budget per request for waiting out an overloaded model (529).
# 0 = off (the 529 is passed to the client); capped at 1h.
capacity_max      = "5m"

[retry]
# Pauses before retrying a transient failure (timeout, reset, 5xx) on the
# same credential. One retry per entry.
transient     = ["250ms", "750ms"]
# Upstream attempts per request, waits not counted.
max_attempts  = 8
# Longest wait for an upstream's response headers; non-streaming answers
# send headers only when they are done, so keep it generous.
header_timeout = "10m"
# A stream with no content event this long after its headers is tried on
# another credential; one silent this long mid-answer ends with an error
# event the client retries at once. 0 = no deadline. See docs/providers.md.
first_event_timeout = "2m"
idle_timeout        = "150s"

[fallback]
# When no credential of a provider can take a request (all cooling, parked
# or paused), another provider with a ready credential serves it: the model
# is mapped by strength tier and, between the Anthropic, OpenAI and Gemini
# APIs, the request and answer are translated, so Claude Code can run on a
# ChatGPT login and Codex or Gemini CLI on a Claude one. A provider you are
# not logged in to is skipped. The response carries x-subpool-fallback. See
# docs/fallback.md.
enabled = true
# Built in: anthropic -> openai, google; openai -> anthropic, google;
# google -> anthropic, openai. A ladder of your
# own replaces the built-in one for its provider; "anthropic = []" turns it
# off. Rungs are tried in order:
# [[fallback.anthropic]]
# match    = ["claude-opus-*"]      # client models this rung is for (default: all)
# provider = "zai"                  # a provider from [providers.*]
# model    = "glm-4.6"              # default: the provider's model for the tier
# [[fallback.anthropic]]
# provider = "openai"               # opus -> strong, sonnet -> medium, haiku -> fast
#
# The model a fallback asks each provider for, per tier:
# [fallback.models.openai]
# strong = "gpt-5.1"
# medium = "gpt-5.1-codex"
# fast   = "gpt-5.1-codex-mini"
# [fallback.models.anthropic]
# strong = "claude-opus-4-5"
# medium = "claude-sonnet-4-5"
# fast   = "claude-haiku-4-5"
# [fallback.models.google]
# strong = "gemini-2.5-pro"
# medium = "gemini-2.5-flash"
# fast   = "gemini-2.5-flash-lite"
#
# Which of a provider's models are which tier ('*' = any characters; tried
# fast, then strong, then medium; a model nothing matches is in the tier
# that names it above, else medium):
# [fallback.tiers.openai]
# strong = ["gpt-5", "gpt-5.1", "o1", "o3", "*-pro", "*-pro-*", "*-max", "*-max-*"]
# fast   = ["*-mini", "*-mini-*", "*-nano", "*-nano-*"]

[usage]
# Every answer reports the subscription's windows (5h, weekly, per model).
# A login nothing has used for this long has its usage endpoint asked
# instead, and a new one within seconds. 0 = never poll.
poll    = "5m"
# Percent of a window that brings one warning (and one when a spent
# subscription comes back at its reset).
warn_at = 90
# Percent of every subscription's binding window kept for your own use
# (claude.ai, ChatGPT): subpool stops sending to it at 100 - reserve % until
# the window resets. 0 = off. Per login: subpool reserve ID PERCENT.
reserve = 0
# When Claude says requests now draw on paid extra usage, subpool treats
# the subscription as spent until its window resets, unless this is true.
allow_extra_usage = false

[subscriptions]
# A subscription login serves the tool it belongs to: a Claude login serves
# Claude Code only, a Google login Gemini CLI only (the tool is known by its
# User-Agent). Other tools' requests go to API keys, or through fallback.
# ChatGPT logins and API keys serve any tool. Logins named here, by ID or
# label as subpool list shows them, serve every tool, as subpool tools ID
# all does. Anthropic bills other tools' use of a Claude subscription as
# extra usage. See docs/subscriptions.md.
other_tools = []

[network]
# The proxy every outbound connection goes through (requests, token
# refreshes, usage polls, logins): "http://host:port", "socks5://host:port",
# with user:password@ when it asks. Empty: the environment's HTTP_PROXY,
# HTTPS_PROXY and NO_PROXY (a login service does not see a shell's; see
# docs/service.md). Per credential: add-key/login --proxy URL.
proxy = ""

[history]
# Every finished request is kept in history.db in this folder: time, model,
# credential, client, status, tokens and estimated cost; never a prompt, an
# answer or a key. subpool usage and subpool history read it.
enabled = true
# Rows older than this many days are deleted.
days = 90

[update]
# Where news of a release comes from: GitHub's latest-release answer. A
# check sends only this GET, nothing about you or your setup.
feed  = "https://api.github.com/repos/subpool/subpool/releases/latest"
# The tray asks by itself and shows a newer release once, with a link;
# false = only when you run subpool update [--check].
check = true

# [models]
# Aliases a client may ask for as its model. One target changes the model on
# the client's own provider; a list of "PROVIDER/MODEL" is tried in order,
# like the fallback ladder. Answers name the alias, so a client's context
# display keeps working. GET /v1/models lists them.
# opus = "claude-opus-4-5"
# best = ["anthropic/claude-opus-4-5", "openai/gpt-5.1"]

# [prices]
# What API-key requests cost, USD per million tokens, for models the
# built-in table lacks or prices differently. A dated name
# ("claude-sonnet-4-5-20250929") uses its family's price. Subscriptions are
# never priced: their requests show as included.
# "my-model" = { input = 3.0, output = 15.0, cache_read = 0.30, cache_write = 3.75 }
`
