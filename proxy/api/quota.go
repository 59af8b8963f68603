package api

import "time"

// A credential's quota is a set of windows, each named by what it is,
// never by where the upstream put it. classify reads them from answers and
// usage endpoints; pool holds them per credential and acts on them.

// QuotaWindow is one quota window as its upstream reports it.
type QuotaWindow struct {
	Window // Name, Used (fraction), ResetsAt, Binding
	// Status is the upstream's own word for this window: "allowed",
	// "allowed_warning", "rejected"; "" when it says none.
	Status string
	// Model is what the window counts when not every request draws on
	// it: "sonnet", "opus", "oi" (Anthropic's included-overage pool), a
	// Codex limit name such as "GPT-5.3-Codex-Spark"; "" for a window
	// every model shares.
	Model string
	// Length is how long the window is; 0 when not reported.
	Length time.Duration
}

// Quota is what one answer says about a credential's quota.
type Quota struct {
	// Windows, shortest first. At most one is Binding: the window the
	// upstream names as the one that limits the credential (Anthropic's
	// representative claim), else a rejected one, else the fullest shared
	// window.
	Windows []QuotaWindow
	// Status is Anthropic's overall word ("allowed", "allowed_warning",
	// "rejected"); "" when not given.
	Status string
	// ExtraUsage is Claude's paid overflow ("overage"); nil when not
	// reported.
	ExtraUsage *ExtraUsage
	// Plan is the ChatGPT plan ("plus", "pro", "prolite", "free"…), when
	// reported.
	Plan string
	// Credits are ChatGPT credits, when reported.
	Credits *Credits
	// ActiveLimit is the ChatGPT limit the request counted against, as
	// x-codex-active-limit names it: "codex" for the plan's own windows,
	// "codex_bengalfox" for a per-model limit whose windows carry its
	// model; "" when not reported.
	ActiveLimit string
}

// ExtraUsage is Claude's paid usage beyond the plan.
type ExtraUsage struct {
	// InUse: requests are now drawing on paid extra usage
	// (anthropic-ratelimit-unified-overage-in-use: true).
	InUse bool
	// Status is the overage's own word ("allowed", "rejected"); "" when
	// not given.
	Status string
	// DisabledReason is why extra usage is off ("org_level_disabled",
	// "out_of_credits", "org_spend_cap_reached"…).
	DisabledReason string
	// Enabled is the usage endpoint's is_enabled; nil from headers.
	Enabled *bool
	// Used is the fraction of the monthly extra-usage limit spent, -1
	// when unknown.
	Used     float64
	ResetsAt *time.Time
}

// Credits are ChatGPT credits, which serve requests once the plan's
// windows are spent.
type Credits struct {
	HasCredits bool   `json:"has_credits"`
	Unlimited  bool   `json:"unlimited"`
	Balance    string `json:"balance,omitempty"` // as the upstream writes it: "5.39", "$5.00"
}
