package goodput

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
)

// upstream is the simulated provider of one run: per-credential quotas in
// fixed windows, revoked keys, pool-wide outages and capacity storms. Its
// answers carry the status, headers and body the real services send (the
// shapes internal/sim serves; upstream_test.go checks they classify alike),
// so the proxy's real classifier reads them.
type upstream struct {
	sc    *Scenario
	clk   clock.Clock
	creds []*ucred
	// calls in order, kept only when log is set (the conformance test).
	log    []call
	keep   bool
	counts counts
}

type ucred struct {
	id    string
	used  map[string]int   // bucket → requests in window win[bucket]
	win   map[string]int64 // bucket → window index
	told  map[string]time.Time
	calls int
	ok    int
}

// call is one upstream request as the upstream saw it.
type call struct {
	At     time.Duration
	Cred   string
	Model  string
	Status int
	Wasted bool
}

// counts are the upstream's own tallies.
type counts struct {
	Calls, OK, RateLimited, Overloaded, Unauthorized, ServerErrors int
	// Wasted: calls to a credential (or credential and model) that an
	// earlier answer had said was limited until after now.
	Wasted int
}

func newUpstream(sc *Scenario, clk clock.Clock) *upstream {
	u := &upstream{sc: sc, clk: clk}
	for i := range sc.Creds {
		u.creds = append(u.creds, &ucred{id: credID(i), used: map[string]int{}, win: map[string]int64{}, told: map[string]time.Time{}})
	}
	return u
}

var credIDs = func() []string {
	ids := make([]string, 64)
	for i := range ids {
		ids[i] = fmt.Sprintf("key-%d", i)
	}
	return ids
}()

func credID(i int) string {
	if i < len(credIDs) {
		return credIDs[i]
	}
	return fmt.Sprintf("key-%d", i)
}

// answer is what one attempt got back.
type answer struct {
	resp classify.Response
	ok   bool
	// A refusal that names its reset: the client knows from delivery on
	// that calls to cred (bucket "": all its models) before until are
	// refused.
	cred   int
	bucket string
	until  time.Time
}

// delivered records what an answer told its client, once it has it.
func (u *upstream) delivered(a answer) {
	if !a.until.IsZero() {
		c := u.creds[a.cred]
		c.told[a.bucket] = later(c.told[a.bucket], a.until)
	}
}

// windowOf returns the index and end of credential i's window holding t.
func (u *upstream) windowOf(i int, t time.Duration) (int64, time.Duration) {
	ph := u.sc.phase(i)
	idx := int64(math.Floor(float64(t-ph) / float64(u.sc.Window)))
	return idx, ph + time.Duration(idx+1)*u.sc.Window
}

// serve answers a request for model on credential i, now.
func (u *upstream) serve(i int, model string) answer {
	sc := u.sc
	c := u.creds[i]
	now := u.clk.Now()
	t := now.Sub(Epoch)
	b := sc.bucket(model)
	wasted := now.Before(c.told[""]) || (b != "" && now.Before(c.told[b]))
	u.counts.Calls++
	c.calls++
	if wasted {
		u.counts.Wasted++
	}
	a := u.decide(i, c, t, model, b)
	switch a.resp.Status {
	case 200:
		u.counts.OK++
		c.ok++
	case 429:
		u.counts.RateLimited++
	case 529:
		u.counts.Overloaded++
	case 401:
		u.counts.Unauthorized++
	case 500:
		u.counts.ServerErrors++
	}
	if u.keep {
		u.log = append(u.log, call{At: t, Cred: c.id, Model: model, Status: a.resp.Status, Wasted: wasted})
	}
	return a
}

func (u *upstream) decide(i int, c *ucred, t time.Duration, model, b string) answer {
	sc := u.sc
	if at, dead := sc.deadAt(i); dead && t >= at {
		return answer{resp: u.unauthorized()}
	}
	for _, o := range sc.Outages {
		if o.holds(t) {
			wait := o.Start + o.Len - t
			a := answer{resp: u.rateLimited(model, 0, wait, o.Announce, false), cred: i}
			if o.Announce {
				a.until = Epoch.Add(o.Start + o.Len)
			}
			return a
		}
	}
	for _, s := range sc.Storms {
		if s.holds(t) {
			return answer{resp: u.overloaded()}
		}
	}
	for _, s := range sc.Faults {
		if s.holds(t) {
			return answer{resp: u.serverError()}
		}
	}
	idx, end := u.windowOf(i, t)
	if c.win[b] != idx {
		c.win[b], c.used[b] = idx, 0
	}
	q := sc.quota(model)
	if c.used[b] >= q {
		a := answer{resp: u.rateLimited(model, q, end-t, sc.Announce, true), cred: i, bucket: b}
		if sc.Announce {
			a.until = Epoch.Add(end)
		}
		return a
	}
	c.used[b]++
	return answer{resp: u.success(model, c.used[b], q, end), ok: true}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func ceilSecs(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

func header(kv ...string) http.Header {
	h := make(http.Header, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

const (
	anthropicRateLimitBody = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."},"request_id":"req_011CWMy48MLiAUc9C2WYUgJW"}`
	anthropicOverloaded    = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CWMy48MLiAUc9C2WYUgJW"}`
	anthropicUnauthorized  = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CWMy48MLiAUc9C2WYUgJW"}`
	anthropicServerError   = `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_011CWMy48MLiAUc9C2WYUgJW"}`
	openaiServerError      = `{"error":{"code":"server_error","message":"The server had an error while processing your request. Sorry about that!","param":null,"type":"server_error"}}`
	openaiUnauthorized     = `{"error":{"code":"invalid_api_key","message":"Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.","param":null,"type":"invalid_request_error"}}`
	openaiOverloaded       = `{"error":{"code":"server_is_overloaded","message":"Our servers are currently overloaded. Please try again later.","param":null,"type":"server_error"}}`
)

var successBody = []byte(`{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn"}`)

// rateLimited is a 429. quota > 0: the credential's (or model's) window
// is spent and resets in wait; quota 0: a pool-wide limit. announce adds
// the reset hints the provider sends.
func (u *upstream) rateLimited(model string, quota int, wait time.Duration, announce, window bool) classify.Response {
	now := u.clk.Now()
	secs := ceilSecs(wait)
	if u.sc.Provider == "openai" {
		msg := "Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1."
		if window && u.sc.PerModel {
			msg = fmt.Sprintf("Rate limit reached for %s in organization org-sim on requests per min (RPM): Limit %d, Used %d, Requested 1.", model, quota, quota)
		}
		var h http.Header
		if announce {
			d := wait.Round(time.Millisecond)
			msg += " Please try again in " + d.String() + "."
			h = header("Content-Type", "application/json", "retry-after", strconv.Itoa(secs),
				"retry-after-ms", strconv.FormatInt(d.Milliseconds(), 10),
				"x-ratelimit-limit-requests", strconv.Itoa(max(quota, 500)), "x-ratelimit-remaining-requests", "0",
				"x-ratelimit-reset-requests", d.String())
		} else {
			h = header("Content-Type", "application/json")
		}
		msg += " Visit https://platform.openai.com/account/rate-limits to learn more."
		body := fmt.Sprintf(`{"error":{"code":"rate_limit_exceeded","message":%q,"param":null,"type":"requests"}}`, msg)
		return classify.Response{Status: 429, Header: h, Body: []byte(body)}
	}
	h := header("Content-Type", "application/json", "request-id", "req_011CWMy48MLiAUc9C2WYUgJW")
	if announce {
		reset := now.Add(wait)
		switch {
		case u.sc.Subscription && window:
			at := strconv.FormatInt(reset.Unix(), 10)
			h.Set("anthropic-ratelimit-unified-status", "rejected")
			h.Set("anthropic-ratelimit-unified-reset", at)
			h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
			h.Set("anthropic-ratelimit-unified-5h-status", "rejected")
			h.Set("anthropic-ratelimit-unified-5h-utilization", "1.0")
			h.Set("anthropic-ratelimit-unified-5h-reset", at)
		case window:
			h.Set("retry-after", strconv.Itoa(secs))
			h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(quota))
			h.Set("anthropic-ratelimit-requests-remaining", "0")
			h.Set("anthropic-ratelimit-requests-reset", reset.UTC().Format(time.RFC3339))
		default:
			h.Set("retry-after", strconv.Itoa(secs))
		}
	}
	return classify.Response{Status: 429, Header: h, Body: []byte(anthropicRateLimitBody)}
}

func (u *upstream) overloaded() classify.Response {
	if u.sc.Provider == "openai" {
		return classify.Response{Status: 503, Header: header("Content-Type", "application/json"), Body: []byte(openaiOverloaded)}
	}
	return classify.Response{Status: 529, Header: header("Content-Type", "application/json"), Body: []byte(anthropicOverloaded)}
}

func (u *upstream) serverError() classify.Response {
	if u.sc.Provider == "openai" {
		return classify.Response{Status: 500, Header: header("Content-Type", "application/json"), Body: []byte(openaiServerError)}
	}
	return classify.Response{Status: 500, Header: header("Content-Type", "application/json"), Body: []byte(anthropicServerError)}
}

func (u *upstream) unauthorized() classify.Response {
	if u.sc.Provider == "openai" {
		return classify.Response{Status: 401, Header: header("Content-Type", "application/json"), Body: []byte(openaiUnauthorized)}
	}
	return classify.Response{Status: 401, Header: header("Content-Type", "application/json"), Body: []byte(anthropicUnauthorized)}
}

// success is a 200. A subscription reports its window's utilization; an
// API key that announces its resets reports its request budget, as the
// services do on every answer.
func (u *upstream) success(model string, used, quota int, end time.Duration) classify.Response {
	h := header("Content-Type", "application/json")
	now := u.clk.Now()
	switch {
	case u.sc.Announce && !u.sc.Subscription && u.sc.Provider == "openai":
		h.Set("x-ratelimit-limit-requests", strconv.Itoa(quota))
		h.Set("x-ratelimit-remaining-requests", strconv.Itoa(quota-used))
		h.Set("x-ratelimit-reset-requests", Epoch.Add(end).Sub(now).Round(time.Millisecond).String())
	case u.sc.Announce && !u.sc.Subscription:
		h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(quota))
		h.Set("anthropic-ratelimit-requests-remaining", strconv.Itoa(quota-used))
		h.Set("anthropic-ratelimit-requests-reset", Epoch.Add(end).UTC().Format(time.RFC3339))
	}
	if u.sc.Subscription {
		at := strconv.FormatInt(Epoch.Add(end).Unix(), 10)
		h.Set("anthropic-ratelimit-unified-status", "allowed")
		h.Set("anthropic-ratelimit-unified-reset", at)
		h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
		h.Set("anthropic-ratelimit-unified-5h-status", "allowed")
		h.Set("anthropic-ratelimit-unified-5h-utilization", strconv.FormatFloat(float64(used)/float64(quota), 'f', 3, 64))
		h.Set("anthropic-ratelimit-unified-5h-reset", at)
	}
	return classify.Response{Status: 200, Header: h, Body: successBody}
}
