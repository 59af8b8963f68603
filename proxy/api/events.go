package api

import "time"

// EventType names an event on the stream.
type EventType string

// Event types. The contract lists the first group; the rest are ours.
const (
	EventSnapshot          EventType = "snapshot"
	EventRequestFinished   EventType = "request_finished"
	EventCooldownStarted   EventType = "cooldown_started"
	EventCooldownEnded     EventType = "cooldown_ended"
	EventCooldownExtended  EventType = "cooldown_extended" // same fields as cooldown_started
	EventRotated           EventType = "rotated"
	EventWaitStarted       EventType = "wait_started"
	EventWaitEnded         EventType = "wait_ended"
	EventTokenRefreshed    EventType = "token_refreshed"
	EventReloginRequired   EventType = "relogin_required"
	EventCredentialAdded   EventType = "credential_added"
	EventCredentialRemoved EventType = "credential_removed"
	EventCredentialUpdated EventType = "credential_updated"
	EventParked            EventType = "parked"
	EventFallback          EventType = "fallback"
	EventRetried           EventType = "retried"
	EventProxyStarted      EventType = "proxy_started"
	EventProxyStopping     EventType = "proxy_stopping"
	EventUsageUpdated      EventType = "usage_updated" // Windows: the credential's windows now
	EventUsageWarning      EventType = "usage_warning" // Window, Used, Kind (UsageWarnAt or UsageBack), Reason
	EventPaceChanged       EventType = "pace_changed"  // Paces: the credential's learned paces now, none when forgotten
)

// usage_warning kinds: a window crossed [usage] warn_at, or a spent
// subscription can be used again.
const (
	UsageWarnAt = "warn_at"
	UsageBack   = "back"
)

// Wait kinds.
const (
	WaitSoleProvider = "sole_provider"
	WaitCapacity     = "capacity"
)

// Event is one decision or change. Fields that do not apply to a type are
// left empty and omitted from JSON. ID and Time are set by the hub.
type Event struct {
	ID           uint64    `json:"id"`
	Type         EventType `json:"type"`
	Time         time.Time `json:"time"`
	Provider     string    `json:"provider,omitempty"`
	CredentialID string    `json:"credential_id,omitempty"`
	Label        string    `json:"label,omitempty"`

	// cooldown_started, parked, rotated, relogin_required, wait_*, fallback
	Reason string     `json:"reason,omitempty"`
	Until  *time.Time `json:"until,omitempty"`
	Step   int        `json:"step,omitempty"`
	Steps  int        `json:"steps,omitempty"`
	Scope  string     `json:"scope,omitempty"`
	Model  string     `json:"model,omitempty"`
	Budget bool       `json:"budget,omitempty"` // cooldown_*: a spent request budget, not a 429 (api.Cooldown.Budget)

	// rotated, fallback
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`

	// wait_started, wait_ended
	Kind     string `json:"kind,omitempty"`
	WaitMS   int64  `json:"wait_ms,omitempty"`
	Outcome  string `json:"outcome,omitempty"` // wait_ended: "ready", "aborted", "budget"
	Attempts int    `json:"attempts,omitempty"`

	// request_finished. Model is the model the client asked for; the
	// token counts are what the upstream reported (metering.Usage: Input
	// excludes cached input, which is CacheReadTokens).
	Path             string `json:"path,omitempty"`
	Status           int    `json:"status,omitempty"`
	Class            string `json:"class,omitempty"`
	LatencyMS        int64  `json:"latency_ms,omitempty"`
	TTFBMS           int64  `json:"ttfb_ms,omitempty"`
	Client           string `json:"client,omitempty"`          // the client key's name
	ClientApp        string `json:"client_app,omitempty"`      // metering.ClientApp(User-Agent)
	CredentialKind   string `json:"credential_kind,omitempty"` // KindAPIKey or KindOAuth
	ServedModel      string `json:"served_model,omitempty"`
	FallbackTo       string `json:"fallback_to,omitempty"` // "provider/model"
	WaitedMS         int64  `json:"waited_ms,omitempty"`
	InputTokens      int64  `json:"input_tokens,omitempty"`
	OutputTokens     int64  `json:"output_tokens,omitempty"`
	CacheReadTokens  int64  `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64  `json:"cache_write_tokens,omitempty"`

	// credential_updated: the new state
	State string `json:"state,omitempty"`

	// usage_updated: every window of the credential now. usage_warning:
	// the window (Window, its name) and its use (Used, a fraction).
	Windows []Window `json:"windows,omitempty"`
	Window  string   `json:"window,omitempty"`
	Used    float64  `json:"used,omitempty"`

	// pace_changed: every learned pace that holds the credential now, as
	// status lists them; empty when the pool forgot the last.
	Paces []Pace `json:"paces,omitempty"`

	// snapshot
	Snapshot *Status `json:"snapshot,omitempty"`
}

// Emitter takes events. The hub implements it; pool and proxy call it. Emit
// must never block on a slow listener.
type Emitter interface {
	Emit(Event)
}

// Discard is an Emitter that drops everything.
var Discard Emitter = discard{}

type discard struct{}

func (discard) Emit(Event) {}
