// Package api holds the wire types of the admin API and the event stream:
// what the proxy reports, what the tray and scripts read. Plain data, no
// behaviour, no secrets: nothing here may ever carry a key or token.
package api

import (
	"errors"
	"time"
)

// Credential states as reported in status and events.
const (
	StateReady   = "ready"
	StateCooling = "cooling"
	StateParked  = "parked"
	StatePaused  = "paused"
)

// Credential kinds.
const (
	KindAPIKey = "api_key"
	KindOAuth  = "oauth"
)

// Park kinds: why a credential (or one model of it) is out until the user acts.
const (
	ParkRelogin = "relogin"
	ParkPayment = "payment"
	// ParkRegion: the provider refuses the location of the credential's
	// egress; every credential leaving from that egress is parked with it,
	// until [network] proxy or the credential's own proxy changes.
	ParkRegion = "region"
)

// Status is what GET /subpool/v1/status returns and what the event
// stream's snapshot carries.
type Status struct {
	Version   string           `json:"version"`
	Listen    string           `json:"listen"`
	StartedAt time.Time        `json:"started_at"`
	Now       time.Time        `json:"now"`
	Providers []ProviderStatus `json:"providers"`
	// Clients are the client keys by name, with their requests in flight.
	Clients []ClientStatus `json:"clients,omitempty"`
	// History is the request history's health; nil when it is off.
	History *HistoryStatus `json:"history,omitempty"`
	// ConfigProblem is why the last edit of config.toml was refused, until
	// a reload reads a file it takes: the proxy runs on the config before.
	ConfigProblem string `json:"config_problem,omitempty"`
	// Commit and Built name the build beside Version (`subpool
	// version`); empty when the binary carries no VCS stamp.
	Commit string `json:"commit,omitempty"`
	Built  string `json:"built,omitempty"`
}

// HistoryStatus is the request history's writer: rows it had to drop
// rather than slow a request (its queue was full), since the file was
// made; and while its writes fail, why (Problem), the rows waiting to be
// written (Held) and those lost past that bound (Failed).
type HistoryStatus struct {
	Dropped int64  `json:"dropped"`
	Failed  int64  `json:"failed"`
	Held    int64  `json:"held,omitempty"`
	Problem string `json:"problem,omitempty"`
}

// ProviderStatus is one pool.
type ProviderStatus struct {
	Name       string `json:"name"`
	Wire       string `json:"wire"`        // "anthropic" or "openai"
	LimitScope string `json:"limit_scope"` // "credential" or "egress"
	// Cooldown is set while an egress-wide (provider-scoped) cooldown holds.
	Cooldown    *Cooldown          `json:"cooldown,omitempty"`
	Credentials []CredentialStatus `json:"credentials"`
}

// CredentialStatus is one credential, without its secret.
type CredentialStatus struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
	Label    string `json:"label"`
	Kind     string `json:"kind"`
	// Source names where an imported credential came from ("claude-code",
	// "codex"); empty for keys and logins made in subpool.
	Source string `json:"source,omitempty"`
	// State is the credential-wide state. A credential cooling or parked for
	// one model only is still "ready"; see Cooldowns and Parks.
	State     string       `json:"state"`
	Cooldowns []Cooldown   `json:"cooldowns,omitempty"`
	Parks     []Park       `json:"parks,omitempty"`
	Reason    string       `json:"reason,omitempty"` // the last reason, in plain words
	Usage     *Utilization `json:"utilization,omitempty"`
	Counters  Counters     `json:"counters"`
	InFlight  int          `json:"in_flight"`
	LastUsed  *time.Time   `json:"last_used,omitempty"`
	// ExpiresAt is the OAuth access token's expiry, when known.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Reserve is the percent of the binding window kept for the person's
	// own use (a subscription's own setting, else [usage] reserve); 0
	// when none. ReservedUntil is set while the reserve holds the
	// credential back: the binding window's reset.
	Reserve       int        `json:"reserve,omitempty"`
	ReservedUntil *time.Time `json:"reserved_until,omitempty"`
	// OwnTool is the tool a subscription login serves by default
	// (SubscriptionTool); empty when any tool may use the credential.
	// OtherTools: the person opted this login in for other tools too.
	OwnTool    string `json:"own_tool,omitempty"`
	OtherTools bool   `json:"other_tools,omitempty"`
	// Proxy is the credential's own egress proxy as scheme://host:port,
	// never with its user:password; empty when it uses [network] proxy
	// or the environment's.
	Proxy string `json:"proxy,omitempty"`
	// Paces are the limit windows subpool holds this credential to (its
	// provider's first, then its own, then per model) where the upstream
	// refused it with 429s that named no reset time: learned from those
	// refusals, and dropped as soon as an answer's headers tell the limit
	// or after a quiet spell. The credential stays "ready" while paced.
	Paces []Pace `json:"paces,omitempty"`
}

// Pace is one learned limit window (docs/pool.md, Pacing): Requests per
// WindowMS, the window's length 0 while not learned yet.
type Pace struct {
	Scope    string `json:"scope"`           // "credential", "model" or "provider"
	Model    string `json:"model,omitempty"` // set when Scope is "model"
	Requests int    `json:"requests"`
	WindowMS int64  `json:"window_ms"`
	// Next is when the next request may go, while that is still ahead.
	Next *time.Time `json:"next,omitempty"`
}

// Cooldown is one active cooldown.
type Cooldown struct {
	Scope  string    `json:"scope"`           // "credential", "model" or "provider"
	Model  string    `json:"model,omitempty"` // set when Scope is "model"
	Until  time.Time `json:"until"`
	Step   int       `json:"step"`  // 1-based ladder step; 0 when the upstream gave the time
	Steps  int       `json:"steps"` // ladder length, for "step 2/3"
	Reason string    `json:"reason,omitempty"`
	// Budget: the upstream said no requests remain for this model until
	// Until (a spent request budget), rather than refusing one with a
	// 429. A model can have both at once.
	Budget bool `json:"budget,omitempty"`
}

// Park is a credential (Model empty) or one model of it out of service
// until the user acts: log in again, or sort out billing.
type Park struct {
	Kind   string    `json:"kind"` // ParkRelogin, ParkPayment or ParkRegion
	Model  string    `json:"model,omitempty"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
}

// Utilization is the subscription usage the upstream reports in headers.
type Utilization struct {
	FiveHour *Window `json:"five_hour,omitempty"` // Claude 5h / Codex primary
	SevenDay *Window `json:"seven_day,omitempty"` // Claude 7d / Codex secondary
	// Status is the upstream's own word ("allowed", "allowed_warning", "rejected").
	Status string `json:"status,omitempty"`
	// Windows is every window the upstream reports, each named
	// (classify.ReadWindows and the usage-endpoint readers fill it).
	Windows   []Window  `json:"windows,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Window is one usage window.
type Window struct {
	// Name says which window, by its length and what it counts: "5h",
	// "7d", "7d_sonnet", "7d_oi"; "requests", "tokens" for API keys.
	// Empty in FiveHour and SevenDay, whose field names say it.
	Name     string     `json:"name,omitempty"`
	Used     float64    `json:"used"` // fraction 0..1
	ResetsAt *time.Time `json:"resets_at,omitempty"`
	// Binding marks the window that limits the credential now.
	Binding bool `json:"binding,omitempty"`
}

// Headroom is 1 minus the fullest window; 1 when nothing is known.
func (u *Utilization) Headroom() float64 {
	if u == nil {
		return 1
	}
	used := 0.0
	for _, w := range []*Window{u.FiveHour, u.SevenDay} {
		if w != nil && w.Used > used {
			used = w.Used
		}
	}
	if used > 1 {
		used = 1
	}
	return 1 - used
}

// SharedWindows picks the windows named "5h" and "7d" out of ws, as
// Utilization's FiveHour and SevenDay carry them: without name or binding,
// since those fields' names say which window it is. The proxy and the tray
// both fill those fields from Windows.
func SharedWindows(ws []Window) (fiveHour, sevenDay *Window) {
	for _, w := range ws {
		plain := w
		plain.Name, plain.Binding = "", false
		switch w.Name {
		case "5h":
			fiveHour = &plain
		case "7d":
			sevenDay = &plain
		}
	}
	return fiveHour, sevenDay
}

// Counters are per-credential totals since start.
type Counters struct {
	Requests   int64 `json:"requests"`
	Errors     int64 `json:"errors"`
	RateLimits int64 `json:"rate_limits"`
}

// AddCredential is the body of POST /subpool/v1/credentials.
type AddCredential struct {
	Provider string `json:"provider"`
	Label    string `json:"label"`
	Kind     string `json:"kind"` // KindAPIKey or KindOAuth
	// Source is set for credentials imported from a CLI ("claude-code",
	// "codex"); the secret then also carries "source_path", the CLI's
	// token file, which subpool keeps in step when it refreshes.
	Source string `json:"source,omitempty"`
	// Secret for api_key: {"key": "..."}; for oauth: {"access_token",
	// "refresh_token", "expires_at" (RFC 3339), "id_token", "account_id"}.
	Secret map[string]string `json:"secret"`
	// Proxy is the credential's own egress proxy (http://, https:// or
	// socks5://, user:password allowed), overriding [network] proxy.
	// Kept with the credential's metadata, shown only without its
	// user:password.
	Proxy string `json:"proxy,omitempty"`
}

// Added is the answer to AddCredential.
type Added struct {
	ID string `json:"id"`
}

// LoginStart is the answer to POST /subpool/v1/login: the URL the user
// opens; the flow finishes in the proxy, which emits credential_added.
type LoginStart struct {
	Provider string `json:"provider"`
	URL      string `json:"url"`
}

// Error is the admin API's error body.
type Error struct {
	Error string `json:"error"`
}

// Errors the admin backend returns; the HTTP layer maps them to statuses.
var (
	ErrNotFound    = errors.New("no such credential")
	ErrBadRequest  = errors.New("bad request")
	ErrUnsupported = errors.New("not supported")
	// ErrConflict: 409. The home already holds what was to be added (a
	// key, a label; the message names the credential that has it), or the
	// credential's state keeps the action from doing what was asked (a
	// resume of a login that needs a new login).
	ErrConflict = errors.New("conflict")
)
