package sim

import (
	"net/http"
	"strconv"
	"time"
)

// The usage endpoints subpool polls for idle logins:
//
//	GET /api/oauth/usage          Claude (anthropic-beta: oauth-2025-04-20)
//	GET /backend-api/wham/usage   ChatGPT, beside the Codex backend
//
// Both answer from the same windows SetUtilization (and SetWindows) set
// and the answers' headers report, in the shapes the real endpoints use
// (classify.ReadClaudeUsage and ReadCodexUsage read them). Each call is a
// Record; ScriptUsage plays refusals (a 429, a 500, a 403 for a token
// without the user:profile scope). Script's steps are the model routes'
// alone, so a poller never takes a scripted failure meant for a request,
// and a poll neither spends nor grows the windows.
// Claude's answer needs the beta header, as the real one does: without it
// the endpoint is a 404 here.

// UsageExtras are what a credential's windows report beyond 5h and 7d.
type UsageExtras struct {
	// ModelWeekly is a per-model weekly window's use, a fraction: Claude
	// "7d_sonnet" (seven_day_sonnet), Codex an additional limit named
	// ModelLimit. 0 reports none; 1 or more reports it spent (rejected).
	ModelWeekly float64
	// ModelLimit names the Codex per-model limit; default
	// "GPT-5.3-Codex-Spark".
	ModelLimit string
	// ExtraUsage: Claude requests now draw on paid extra usage
	// (anthropic-ratelimit-unified-overage-in-use: true).
	ExtraUsage bool
}

// SetUsageExtras makes credential's answers (headers and usage endpoint)
// report e beside its 5h and 7d windows. A full 5h or 7d window is
// reported rejected whether or not extras are set. The zero value removes
// the extras.
func (s *Server) SetUsageExtras(credential string, e UsageExtras) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.credLocked(credential).extras = e
}

// usageSnapshot is a credential's windows now, rolled past their resets.
func (s *Server) usageSnapshot(credential string) (u utilization, e UsageExtras, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.creds[credential]
	if cs == nil {
		return u, e, false
	}
	e = cs.extras
	if cs.util == nil {
		return u, e, false
	}
	cs.util.roll(s.clk.Now())
	return *cs.util, e, true
}

func status(used float64) string {
	if used >= 1 {
		return "rejected"
	}
	return "allowed"
}

// usageExtraHeaders corrects and completes the windows utilizationHeaders
// wrote: a full window's status, a per-model week, extra usage. It runs
// deferred from utilizationHeaders.
func (s *Server) usageExtraHeaders(h http.Header, credential, provider string, codex bool) {
	u, e, ok := s.usageSnapshot(credential)
	if !ok {
		return
	}
	now := s.clk.Now()
	weekReset := u.sevenDayReset
	if provider == Anthropic && !codex {
		const p = "anthropic-ratelimit-unified-"
		h.Set(p+"5h-status", status(u.fiveHour))
		h.Set(p+"7d-status", status(u.sevenDay))
		overall := status(max(u.fiveHour, u.sevenDay))
		if e.ModelWeekly > 0 {
			h.Set(p+"7d_sonnet-status", status(e.ModelWeekly))
			h.Set(p+"7d_sonnet-utilization", ftoa(e.ModelWeekly))
			h.Set(p+"7d_sonnet-reset", unix(weekReset))
		}
		if e.ExtraUsage {
			overall = "allowed" // the overage serves what the plan refuses
			h.Set(p+"overage-status", "allowed")
			h.Set(p+"overage-in-use", "true")
		}
		h.Set(p+"status", overall)
		return
	}
	if e.ModelWeekly > 0 {
		const p = "x-codex-bengalfox-"
		h.Set(p+"limit-name", e.modelLimit())
		h.Set(p+"primary-used-percent", ftoa(e.ModelWeekly*100))
		h.Set(p+"primary-window-minutes", strconv.Itoa(int(sevenDays/time.Minute)))
		h.Set(p+"primary-reset-after-seconds", strconv.Itoa(ceilSeconds(weekReset.Sub(now))))
		h.Set(p+"primary-reset-at", unix(weekReset))
	}
}

func (e UsageExtras) modelLimit() string {
	if e.ModelLimit != "" {
		return e.ModelLimit
	}
	return "GPT-5.3-Codex-Spark"
}

// ScriptUsage queues answers for credential's usage polls, as Script does
// for its requests (Model is ignored; Always does not apply).
func (s *Server) ScriptUsage(credential string, steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.credLocked(credential)
	for _, st := range steps {
		cs.polls = append(cs.polls, queued{step: st, left: max(st.Times, 1)})
	}
}

// takeStep is the scripted answer for x, if any: a usage poll's from
// ScriptUsage, anything else's from Script.
func (x *exchange) takeStep() (Step, bool) {
	if x.bookkeeping() {
		return Step{}, false
	}
	if !x.usageRoute() {
		return x.s.takeStep(x.cred, x.req.Model)
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.creds[x.cred]
	if cs == nil || len(cs.polls) == 0 {
		return Step{}, false
	}
	q := &cs.polls[0]
	st := q.step
	if q.left--; q.left == 0 {
		cs.polls = cs.polls[1:]
	}
	return st, true
}

// claudeUsage answers GET /api/oauth/usage.
func (x *exchange) claudeUsage() {
	x.idHeader()
	if x.r.Header.Get("anthropic-beta") == "" {
		x.w.WriteHeader(http.StatusNotFound)
		x.done = true
		return
	}
	u, e, _ := x.s.usageSnapshot(x.cred)
	bucket := func(used float64, reset time.Time) any {
		m := map[string]any{"utilization": used * 100, "resets_at": nil}
		if !reset.IsZero() {
			m["resets_at"] = reset.UTC().Format(time.RFC3339Nano)
		}
		return m
	}
	body := map[string]any{
		"five_hour":      bucket(u.fiveHour, u.fiveHourReset),
		"seven_day":      bucket(u.sevenDay, u.sevenDayReset),
		"seven_day_opus": nil,
		"extra_usage":    map[string]any{"is_enabled": e.ExtraUsage, "monthly_limit": nil, "used_credits": nil, "utilization": nil},
	}
	if e.ModelWeekly > 0 {
		body["seven_day_sonnet"] = bucket(e.ModelWeekly, u.sevenDayReset)
	}
	x.writeJSON(body)
}

// codexUsage answers GET /backend-api/wham/usage.
func (x *exchange) codexUsage() {
	x.idHeader()
	u, e, _ := x.s.usageSnapshot(x.cred)
	now := x.s.clk.Now()
	window := func(used float64, span time.Duration, reset time.Time) map[string]any {
		m := map[string]any{"used_percent": used * 100, "limit_window_seconds": int(span / time.Second)}
		if !reset.IsZero() {
			m["reset_at"] = reset.Unix()
			m["reset_after_seconds"] = ceilSeconds(reset.Sub(now))
		}
		return m
	}
	reached := u.fiveHour >= 1 || u.sevenDay >= 1
	body := map[string]any{
		"plan_type": "plus",
		"rate_limit": map[string]any{
			"allowed": !reached, "limit_reached": reached,
			"primary_window":   window(u.fiveHour, fiveHours, u.fiveHourReset),
			"secondary_window": window(u.sevenDay, sevenDays, u.sevenDayReset),
		},
		"additional_rate_limits": nil,
		"credits":                map[string]any{"has_credits": false, "unlimited": false, "balance": "0"},
	}
	if e.ModelWeekly > 0 {
		body["additional_rate_limits"] = []any{map[string]any{
			"limit_name": e.modelLimit(),
			"rate_limit": map[string]any{
				"allowed": e.ModelWeekly < 1, "limit_reached": e.ModelWeekly >= 1,
				"primary_window": window(e.ModelWeekly, sevenDays, u.sevenDayReset),
			},
		}}
	}
	x.writeJSON(body)
}

// usageRoute reports that x asks a usage endpoint: it neither spends nor
// is refused by the credential's Quota, as the real endpoints answer
// whatever the plan has left.
func (x *exchange) usageRoute() bool {
	if x.r.Method == http.MethodPost && x.r.URL.Path == "/v1internal:retrieveUserQuota" {
		return true // Code Assist's usage poll
	}
	return x.r.Method == http.MethodGet && (x.r.URL.Path == "/api/oauth/usage" || x.r.URL.Path == "/backend-api/wham/usage")
}

// bookkeeping reports the Google calls that are neither model calls nor
// usage polls (loadCodeAssist, recordCodeAssistMetrics, the model list):
// no script answers them and no quota counts them, so a step meant for a
// request is never spent on a client's setup or telemetry.
func (x *exchange) bookkeeping() bool {
	return x.provider == Google && !x.googleModelRoute() && !x.usageRoute()
}
