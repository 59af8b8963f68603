package sim

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Quota is a per-credential budget over a fixed window on Options.Clock.
// The window opens with the first request after the previous one closed,
// so its end (the reset the sim announces) is exact: a client that waits
// for it never gets a second 429. Refused requests cost nothing.
type Quota struct {
	Requests int           // requests per window; 0 = unlimited
	Tokens   int           // input plus output tokens per window (estimated); 0 = unlimited
	Window   time.Duration // default one minute
	// Announce sends the reset hints with the 429: retry-after and
	// anthropic-ratelimit-{requests,tokens}-reset (RFC 3339) or
	// x-ratelimit-reset-{requests,tokens}; on the Codex backend, a
	// usage_limit_reached body with resets_at and resets_in_seconds.
	// Without it the 429 carries no time at all.
	Announce bool
}

// The limits reported on success when a credential has no Quota: nothing
// enforces them, they only make the headers look like a real tier.
const (
	defaultRequestLimit = 4000
	defaultTokenLimit   = 400000
	defaultWindow       = time.Minute
)

type credState struct {
	queue  []queued
	always *Step
	calls  int

	quota    Quota
	hasQuota bool
	winStart time.Time
	winOpen  bool
	reqs     int
	tokens   int

	util   *utilization
	extras UsageExtras // SetUsageExtras (usage.go)
	polls  []queued    // ScriptUsage (usage.go)
	growth growth      // SetWindows: what each answer adds to util
}

type utilization struct {
	fiveHour, sevenDay           float64
	fiveHourReset, sevenDayReset time.Time
}

const (
	fiveHours = 5 * time.Hour
	sevenDays = 7 * 24 * time.Hour
)

func (s *Server) credLocked(credential string) *credState {
	cs := s.creds[credential]
	if cs == nil {
		cs = &credState{}
		s.creds[credential] = cs
	}
	return cs
}

// SetQuota enforces q on credential from now on, with a fresh window. The
// zero Quota removes it.
func (s *Server) SetQuota(credential string, q Quota) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.credLocked(credential)
	if q.Window <= 0 {
		q.Window = defaultWindow
	}
	cs.quota = q
	cs.hasQuota = q.Requests > 0 || q.Tokens > 0
	cs.winOpen = false
}

// SetUtilization makes every answer for credential (errors included, as
// upstream does) report subscription usage: fiveHour and sevenDay are
// fractions 0..1. Anthropic routes get anthropic-ratelimit-unified-*
// (status "allowed", utilization, reset in epoch seconds); OpenAI routes
// get x-codex-primary-* and x-codex-secondary-* (used percent, window
// minutes, reset-after-seconds, reset-at). Each window resets five hours
// or seven days after this call on Options.Clock, and usage then falls to
// zero, as a real window does. It only reports: use SetQuota or a Step to
// refuse. A negative value stops the reporting.
func (s *Server) SetUtilization(credential string, fiveHour, sevenDay float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.credLocked(credential)
	if fiveHour < 0 || sevenDay < 0 {
		cs.util = nil
		return
	}
	now := s.clk.Now()
	cs.growth = growth{}
	cs.util = &utilization{
		fiveHour: fiveHour, sevenDay: sevenDay,
		fiveHourReset: now.Add(fiveHours), sevenDayReset: now.Add(sevenDays),
	}
}

// window rolls the fixed window forward when it has ended and returns its
// limits and end. It requires s.mu.
func (cs *credState) window(now time.Time) (reqLimit, tokLimit int, end time.Time) {
	win := defaultWindow
	reqLimit, tokLimit = defaultRequestLimit, defaultTokenLimit
	if cs.hasQuota {
		win = cs.quota.Window
		reqLimit, tokLimit = cs.quota.Requests, cs.quota.Tokens
	}
	if !cs.winOpen || !now.Before(cs.winStart.Add(win)) {
		cs.winStart, cs.winOpen = now, true
		cs.reqs, cs.tokens = 0, 0
	}
	return reqLimit, tokLimit, cs.winStart.Add(win)
}

// refusal is an over-quota answer.
type refusal struct {
	kind     string // "requests" or "tokens"; "day" for a Google login's day
	limit    int
	reset    time.Time
	window   time.Duration
	announce bool
}

// rateSnapshot is what the success headers report.
type rateSnapshot struct {
	reqLimit, reqLeft, tokLimit, tokLeft int
	reset                                time.Time
}

// admit charges one request of cost tokens to credential's window, or
// refuses it when that would go over its Quota. On success it leaves the
// snapshot for the rate-limit headers in the exchange.
func (x *exchange) admit() *refusal {
	if x.usageRoute() || x.bookkeeping() {
		return nil // asking for usage spends none (usage.go)
	}
	s := x.s
	cost := x.cost()
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.credLocked(x.cred)
	now := s.clk.Now()
	reqLimit, tokLimit, end := cs.window(now)
	if cs.hasQuota {
		q := cs.quota
		if reqLimit > 0 && cs.reqs >= reqLimit {
			return &refusal{kind: "requests", limit: reqLimit, reset: end, window: q.Window, announce: q.Announce}
		}
		if tokLimit > 0 && cs.tokens+cost > tokLimit {
			return &refusal{kind: "tokens", limit: tokLimit, reset: end, window: q.Window, announce: q.Announce}
		}
	}
	charge, day := x.chargeDayLocked(now) // codeassist.go: a login's daily requests
	if day != nil {
		return day
	}
	charge()
	cs.reqs++
	cs.tokens += cost
	if reqLimit <= 0 {
		reqLimit = defaultRequestLimit
	}
	if tokLimit <= 0 {
		tokLimit = defaultTokenLimit
	}
	x.rate = rateSnapshot{
		reqLimit: reqLimit, reqLeft: max(reqLimit-cs.reqs, 0),
		tokLimit: tokLimit, tokLeft: max(tokLimit-cs.tokens, 0),
		reset: end,
	}
	return nil
}

// refuse answers an over-quota request.
func (x *exchange) refuse(r *refusal) {
	now := x.s.clk.Now()
	wait := r.reset.Sub(now)
	secs := ceilSeconds(wait)
	var body []byte
	hdr := map[string]string{}
	switch {
	case x.provider == Google:
		body = x.refuseGoogle(r) // Google announces in the body, never in headers
	case x.codex:
		body = x.render(usageLimitTemplate(wait, r.announce))
		if r.announce {
			hdr["x-codex-primary-used-percent"] = "100"
			hdr["x-codex-primary-reset-after-seconds"] = strconv.Itoa(secs)
			hdr["x-codex-primary-reset-at"] = strconv.FormatInt(r.reset.Unix(), 10)
		}
	case x.provider == Anthropic:
		body = anthropicError("rate_limit_error", anthropicRateLimitMsg, x.reqID)
		if r.announce {
			p := "anthropic-ratelimit-" + r.kind + "-"
			hdr["retry-after"] = strconv.Itoa(secs)
			hdr[p+"limit"] = strconv.Itoa(r.limit)
			hdr[p+"remaining"] = "0"
			hdr[p+"reset"] = r.reset.UTC().Format(time.RFC3339)
		}
	default:
		msg := fmt.Sprintf("Rate limit reached for %s per min: Limit %d, Used %d, Requested 1.", r.kind, r.limit, r.limit)
		if r.announce {
			msg += " Please try again in " + openaiDuration(wait) + "."
			hdr["retry-after"] = strconv.Itoa(secs)
			hdr["retry-after-ms"] = strconv.FormatInt(wait.Milliseconds(), 10)
			hdr["x-ratelimit-limit-"+r.kind] = strconv.Itoa(r.limit)
			hdr["x-ratelimit-remaining-"+r.kind] = "0"
			hdr["x-ratelimit-reset-"+r.kind] = openaiDuration(wait)
		}
		msg += " Visit https://platform.openai.com/account/rate-limits to learn more."
		body = openaiError(msg, r.kind, "rate_limit_exceeded")
	}
	h := x.w.Header()
	for k, v := range hdr {
		h.Set(k, v)
	}
	x.failWith(http.StatusTooManyRequests, body)
}

// successHeaders sets the request id, rate-limit and utilization headers
// of a 200.
func (x *exchange) successHeaders() {
	h := x.w.Header()
	x.idHeader()
	x.s.spend(x.cred)
	x.s.utilizationHeaders(h, x.cred, x.provider, x.codex)
	r := x.rate
	switch {
	case x.provider == Google:
		// Google reports no rate limits on a success; Code Assist's are
		// read from retrieveUserQuota.
	case x.codex:
		// The ChatGPT backend reports plan usage (x-codex-*), not
		// per-minute API limits.
	case x.provider == Anthropic:
		reset := r.reset.UTC().Format(time.RFC3339)
		h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(r.reqLimit))
		h.Set("anthropic-ratelimit-requests-remaining", strconv.Itoa(r.reqLeft))
		h.Set("anthropic-ratelimit-requests-reset", reset)
		for _, p := range []string{"tokens", "input-tokens", "output-tokens"} {
			h.Set("anthropic-ratelimit-"+p+"-limit", strconv.Itoa(r.tokLimit))
			h.Set("anthropic-ratelimit-"+p+"-remaining", strconv.Itoa(r.tokLeft))
			h.Set("anthropic-ratelimit-"+p+"-reset", reset)
		}
	default:
		reset := openaiDuration(r.reset.Sub(x.s.clk.Now()))
		h.Set("x-ratelimit-limit-requests", strconv.Itoa(r.reqLimit))
		h.Set("x-ratelimit-remaining-requests", strconv.Itoa(r.reqLeft))
		h.Set("x-ratelimit-reset-requests", reset)
		h.Set("x-ratelimit-limit-tokens", strconv.Itoa(r.tokLimit))
		h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(r.tokLeft))
		h.Set("x-ratelimit-reset-tokens", reset)
		h.Set("openai-version", "2020-10-01")
		h.Set("openai-processing-ms", strconv.FormatInt(x.s.opts.Latency.Milliseconds(), 10))
	}
}

// utilizationHeaders adds credential's subscription usage, if it has any.
func (s *Server) utilizationHeaders(h http.Header, credential, provider string, codex bool) {
	defer s.usageExtraHeaders(h, credential, provider, codex)
	s.mu.Lock()
	cs := s.creds[credential]
	var u utilization
	have := cs != nil && cs.util != nil
	now := s.clk.Now()
	if have {
		cs.util.roll(now)
		u = *cs.util
	}
	s.mu.Unlock()
	if !have || provider == Google {
		return
	}
	if provider == Anthropic && !codex {
		claim, reset := "five_hour", u.fiveHourReset
		if u.sevenDay > u.fiveHour {
			claim, reset = "seven_day", u.sevenDayReset
		}
		h.Set("anthropic-ratelimit-unified-status", "allowed")
		h.Set("anthropic-ratelimit-unified-reset", unix(reset))
		h.Set("anthropic-ratelimit-unified-representative-claim", claim)
		h.Set("anthropic-ratelimit-unified-5h-status", "allowed")
		h.Set("anthropic-ratelimit-unified-5h-utilization", ftoa(u.fiveHour))
		h.Set("anthropic-ratelimit-unified-5h-reset", unix(u.fiveHourReset))
		h.Set("anthropic-ratelimit-unified-7d-status", "allowed")
		h.Set("anthropic-ratelimit-unified-7d-utilization", ftoa(u.sevenDay))
		h.Set("anthropic-ratelimit-unified-7d-reset", unix(u.sevenDayReset))
		return
	}
	for _, w := range []struct {
		name  string
		used  float64
		reset time.Time
		span  time.Duration
	}{
		{"primary", u.fiveHour, u.fiveHourReset, fiveHours},
		{"secondary", u.sevenDay, u.sevenDayReset, sevenDays},
	} {
		p := "x-codex-" + w.name + "-"
		h.Set(p+"used-percent", ftoa(w.used*100))
		h.Set(p+"window-minutes", strconv.Itoa(int(w.span/time.Minute)))
		h.Set(p+"reset-after-seconds", strconv.Itoa(ceilSeconds(w.reset.Sub(now))))
		h.Set(p+"reset-at", unix(w.reset))
	}
}

// roll starts a new window, with nothing used, once a reset has passed.
func (u *utilization) roll(now time.Time) {
	for !now.Before(u.fiveHourReset) {
		u.fiveHourReset = u.fiveHourReset.Add(fiveHours)
		u.fiveHour = 0
	}
	for !now.Before(u.sevenDayReset) {
		u.sevenDayReset = u.sevenDayReset.Add(sevenDays)
		u.sevenDay = 0
	}
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func itoa(n int) string { return strconv.Itoa(n) }
