package api

import "time"

// Usage report groupings (GET /subpool/v1/usage?by=).
const (
	ByDay        = "day"
	ByHour       = "hour"
	ByCredential = "credential"
	ByModel      = "model"
	ByClient     = "client"
	ByApp        = "app"
	ByProvider   = "provider"
)

// UsageReport is what GET /subpool/v1/usage and `subpool usage --json`
// return: totals since a time, grouped one way.
type UsageReport struct {
	Since time.Time  `json:"since"`
	By    string     `json:"by"`
	Rows  []UsageRow `json:"rows"` // ordered by key (time keys oldest first)
	Total UsageRow   `json:"total"`
	// Dropped counts rows the writer could not keep up with and threw
	// away rather than slow a request, since the database was created.
	Dropped int64 `json:"dropped"`
}

// UsageRow is the totals of one group.
type UsageRow struct {
	// Key is the group: "2026-11-01" (day, local time), "2026-11-01 14:00"
	// (hour), a credential id, model, client key name, client app or
	// provider. Label is the credential's label when By is credential.
	Key   string `json:"key"`
	Label string `json:"label,omitempty"`
	// Credential is the credential id when By splits each group by
	// credential ("hour,credential"); Label is then its label.
	Credential       string `json:"credential,omitempty"`
	Requests         int64  `json:"requests"`
	InputTokens      int64  `json:"input_tokens"`
	OutputTokens     int64  `json:"output_tokens"`
	CacheReadTokens  int64  `json:"cache_read_tokens"`
	CacheWriteTokens int64  `json:"cache_write_tokens"`
	// Refusals counts requests by class, for every class but "ok".
	Refusals map[string]int64 `json:"refusals,omitempty"`
	WaitedMS int64            `json:"waited_ms"`
	// CostUSD is the estimated cost of the API-key requests; Included
	// counts subscription requests, which cost nothing extra, and Unpriced
	// the API-key requests whose model has no price.
	CostUSD  float64 `json:"cost_usd"`
	Included int64   `json:"included"`
	Unpriced int64   `json:"unpriced,omitempty"`
}

// HistoryQuery selects recent requests, newest first.
type HistoryQuery struct {
	Limit  int    // default 50, at most 1000
	Before int64  // only rows with ID < Before; 0: from the newest
	Class  string // only this class; "": any
}

// HistoryPage is what GET /subpool/v1/history returns.
type HistoryPage struct {
	Entries []HistoryEntry `json:"entries"` // newest first, never null
	// Next is the Before of the following page; 0 when this is the last.
	Next int64 `json:"next,omitempty"`
}

// HistoryEntry is one finished request. It never holds a prompt, an
// answer, a body or a secret.
type HistoryEntry struct {
	ID               int64     `json:"id"`
	Time             time.Time `json:"time"` // when it finished
	DurationMS       int64     `json:"duration_ms"`
	TTFBMS           int64     `json:"ttfb_ms,omitempty"`
	Provider         string    `json:"provider"`
	CredentialID     string    `json:"credential_id,omitempty"`
	Label            string    `json:"label,omitempty"`
	CredentialKind   string    `json:"credential_kind,omitempty"`
	Client           string    `json:"client,omitempty"`
	ClientApp        string    `json:"client_app,omitempty"`
	Path             string    `json:"path,omitempty"`
	Model            string    `json:"model,omitempty"`
	ServedModel      string    `json:"served_model,omitempty"`
	FallbackTo       string    `json:"fallback_to,omitempty"`
	Status           int       `json:"status"`
	Class            string    `json:"class"`
	Attempts         int       `json:"attempts"`
	WaitedMS         int64     `json:"waited_ms,omitempty"`
	InputTokens      int64     `json:"input_tokens"`
	OutputTokens     int64     `json:"output_tokens"`
	CacheReadTokens  int64     `json:"cache_read_tokens"`
	CacheWriteTokens int64     `json:"cache_write_tokens"`
	CostUSD          *float64  `json:"cost_usd,omitempty"` // nil: a subscription, or no price
}

// Add folds r's counts into u: the totals of a group, or of a report.
func (u *UsageRow) Add(r UsageRow) {
	u.Requests += r.Requests
	u.InputTokens += r.InputTokens
	u.OutputTokens += r.OutputTokens
	u.CacheReadTokens += r.CacheReadTokens
	u.CacheWriteTokens += r.CacheWriteTokens
	u.WaitedMS += r.WaitedMS
	u.CostUSD += r.CostUSD
	u.Included += r.Included
	u.Unpriced += r.Unpriced
	for c, n := range r.Refusals {
		if u.Refusals == nil {
			u.Refusals = map[string]int64{}
		}
		u.Refusals[c] += n
	}
}
