package classify

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// A credential's quota is a set of windows, each named by what it is,
// never by where the upstream put it: Codex plans report their weekly
// window in the "primary" slot as readily as their five-hour one, so a
// Codex window is named by its length (300 minutes is "5h", 10080 is
// "7d"). The same names come from response headers (ReadWindows) and from
// the usage endpoints polled for idle logins (ReadClaudeUsage,
// ReadCodexUsage). testdata/windows holds the real answers they are built
// from, each with its source.

// The quota types live in proxy/api, so that pool can hold a quota
// without importing classify; the aliases keep the readers' names.
type (
	Window     = api.QuotaWindow
	Quota      = api.Quota
	ExtraUsage = api.ExtraUsage
	Credits    = api.Credits
)

// ReadWindows reads every window a response's headers report, on
// successes and refusals alike:
//
//	anthropic-ratelimit-unified-{5h,7d,7d_oi,…}-{utilization,reset,status}, -status,
//	  -representative-claim, -overage-{status,utilization,reset,in-use,disabled-reason}
//	x-codex-[F-]{primary,secondary}-{used-percent,window-minutes,reset-at,reset-after-seconds},
//	  x-codex-F-limit-name, x-codex-credits-*, x-codex-plan-type, x-codex-active-limit
//	anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}
//	x-ratelimit-{limit,remaining,reset}-{requests,tokens}
//
// ok is false when the headers report nothing. Values that cannot be read
// are dropped, never guessed: a window whose use is unknown is left out,
// unless the upstream says it is rejected (then it is spent).
func ReadWindows(h http.Header, now time.Time) (q Quota, ok bool) {
	var hs headerState
	hs.read(h)
	ws := hs.windows()
	q.Status = cleanStatus(hs.statusOf(kindUnified, ""))
	var resets []time.Time
	var lastReset resetMemo
	for _, w := range ws {
		var out Window
		var reset time.Duration
		var good bool
		switch w.kind {
		case kindUnified:
			if w.name == "" {
				continue
			}
			if w.name == "overage" {
				q.ExtraUsage = overage(w, &hs, now)
				continue
			}
			out, reset, good = unifiedWindow(w, now)
		case kindCodex, kindCodexFamily:
			out, reset, good = codexWindow(w, hs.codexNames, now)
		case kindAPI, kindOpenAI:
			out, reset, good = countWindow(w, now, &lastReset)
		}
		if !good {
			continue
		}
		if q.Windows == nil {
			// This runs on every answer: room for every window read and
			// for their resets costs two allocations, where growing the
			// slice and allocating each reset cost one per window.
			q.Windows = make([]Window, 0, len(ws))
			resets = make([]time.Time, 0, len(ws))
		}
		if believable(reset) {
			resets = append(resets, now.Add(reset))
			out.ResetsAt = &resets[len(resets)-1]
		}
		q.Windows = append(q.Windows, out)
	}
	if q.ExtraUsage == nil && (hs.overageInUse != "" || hs.overageReason != "") {
		q.ExtraUsage = &ExtraUsage{InUse: isTrue(hs.overageInUse), DisabledReason: hs.overageReason, Used: -1}
	}
	q.Plan = cleanStatus(hs.plan)
	q.ActiveLimit = cleanLimitID(hs.activeLimit)
	// Both flags or nothing, as codex-rs reads them.
	has, ok1 := parseBool(hs.credits[0])
	unlimited, ok2 := parseBool(hs.credits[1])
	if ok1 && ok2 {
		q.Credits = &Credits{HasCredits: has, Unlimited: unlimited, Balance: hs.credits[2]}
	}
	// The active limit, when it is a per-model family, is what limits
	// this request: its windows bind rather than the plan's.
	active := hs.activeFamily()
	if n := hs.codexNames[active]; active != "" && n != "" {
		active = n
	}
	finish(&q, claimWindow(hs.claim), active)
	return q, len(q.Windows) > 0 || q.Status != "" || q.ExtraUsage != nil || q.Credits != nil || q.Plan != "" ||
		q.ActiveLimit != ""
}

func (hs *headerState) statusOf(kind winKind, name string) string {
	for _, w := range hs.windows() {
		if w.kind == kind && w.name == name {
			return w.level
		}
	}
	return ""
}

// unifiedWindow reads an Anthropic subscription window: utilization a
// fraction, reset in unix seconds. It returns the window without its
// reset time and how long until that reset (ReadWindows sets ResetsAt).
func unifiedWindow(w window, now time.Time) (Window, time.Duration, bool) {
	name := underscored(w.name) // "7d-sonnet" and "7d_sonnet" are one window
	out := Window{Status: cleanStatus(w.level)}
	out.Name = name
	out.Length, out.Model = windowLength(name)
	used, ok := fraction(w.used, 1)
	switch {
	case ok:
		out.Used = used
	case strings.EqualFold(w.level, "rejected"):
		out.Used = 1
	default:
		return Window{}, 0, false
	}
	return out, untilUnix(w.reset, now), true
}

// underscored is name with "_" for every "-". The API's two-word buckets
// are spelled out, so reading them builds no new string.
func underscored(name string) string {
	switch name {
	case "input-tokens":
		return "input_tokens"
	case "output-tokens":
		return "output_tokens"
	}
	return strings.ReplaceAll(name, "-", "_")
}

// windowLength reads a window name's length and what it counts: "5h" is
// five hours for every model, "7d_sonnet" a week of Sonnet.
func windowLength(name string) (time.Duration, string) {
	head, model, _ := strings.Cut(name, "_")
	if len(head) < 2 {
		return 0, ""
	}
	n, err := strconv.Atoi(head[:len(head)-1])
	if err != nil || n <= 0 {
		return 0, ""
	}
	switch head[len(head)-1] {
	case 'h':
		return time.Duration(n) * time.Hour, model
	case 'd':
		return time.Duration(n) * 24 * time.Hour, model
	}
	return 0, ""
}

// nameOf names a window by its length: "5h", "7d", "30d", "90m".
func nameOf(length time.Duration) string {
	switch m := int64(length / time.Minute); {
	case m%1440 == 0:
		return fmt.Sprintf("%dd", m/1440)
	case m%60 == 0:
		return fmt.Sprintf("%dh", m/60)
	default:
		return fmt.Sprintf("%dm", m)
	}
}

// codexWindow reads a Codex window: used-percent 0..100, its length in
// minutes, reset-at unix seconds or reset-after-seconds. Without a length
// the window keeps its slot's name ("primary"), which says the length is
// not known rather than guessing it. Like unifiedWindow, it returns the
// time until the reset beside the window.
func codexWindow(w window, names map[string]string, now time.Time) (Window, time.Duration, bool) {
	used, ok := fraction(w.used, 100)
	if !ok {
		return Window{}, 0, false
	}
	minutes, _ := strconv.Atoi(w.minutes)
	if _, err := strconv.ParseInt(w.reset, 10, 64); used == 0 && minutes <= 0 && err != nil {
		// An empty slot: 0% of no window, resetting never. codex-rs
		// drops these too (parse_rate_limit_window).
		return Window{}, 0, false
	}
	var out Window
	out.Used = used
	slot := w.name
	if w.kind == kindCodexFamily {
		slot = w.name[len(w.family)+1:]
		out.Model = w.family
		if n := names[w.family]; n != "" {
			out.Model = n
		}
	}
	if minutes > 0 && minutes <= 366*1440 {
		out.Length = time.Duration(minutes) * time.Minute
		out.Name = nameOf(out.Length)
	} else {
		out.Name = slot
	}
	if out.Model != "" {
		out.Name += "_" + strings.ToLower(out.Model)
	}
	d := untilUnix(w.reset, now)
	if d <= 0 {
		d = secondsDur(w.resetAfter)
	}
	return out, d, true
}

// countWindow reads an API key's request or token bucket: used is the
// share of the limit not remaining. Like unifiedWindow, it returns the
// time until the reset beside the window.
func countWindow(w window, now time.Time, last *resetMemo) (Window, time.Duration, bool) {
	limit, ok1 := parseDecimal(w.limit)
	remaining, ok2 := parseDecimal(w.level)
	if !ok1 || !ok2 || limit <= 0 || remaining > limit {
		return Window{}, 0, false
	}
	var out Window
	out.Name = underscored(w.name)
	out.Used = 1 - remaining/limit
	return out, last.resetIn(&w, now), true
}

// resetMemo is the last bucket reset read in one answer. An API key's
// token buckets (tokens, input-tokens, output-tokens) come with one and
// the same RFC 3339 reset, and time.Parse is the dearest step of reading
// a bucket. The kind is part of the key: the same text is a time for one
// family and a duration for another.
type resetMemo struct {
	reset string
	kind  winKind
	d     time.Duration
}

func (m *resetMemo) resetIn(w *window, now time.Time) time.Duration {
	if w.reset != m.reset || w.kind != m.kind {
		m.reset, m.kind, m.d = w.reset, w.kind, w.resetIn(now)
	}
	return m.d
}

// overage reads Claude's extra-usage pool from its unified headers.
func overage(w window, hs *headerState, now time.Time) *ExtraUsage {
	e := &ExtraUsage{
		InUse:          isTrue(hs.overageInUse),
		Status:         cleanStatus(w.level),
		DisabledReason: hs.overageReason,
		Used:           -1,
	}
	if used, ok := fraction(w.used, 1); ok {
		e.Used = used
	}
	e.ResetsAt = resetAt(untilUnix(w.reset, now), now)
	return e
}

// claimWindow names the window a representative claim stands for.
func claimWindow(claim string) string {
	c := strings.ToLower(strings.TrimSpace(claim))
	switch c {
	case "":
		return ""
	case "five_hour":
		return "5h"
	case "seven_day":
		return "7d"
	case "seven_day_overage_included":
		return "7d_oi"
	}
	if model, ok := strings.CutPrefix(c, "seven_day_"); ok {
		return "7d_" + model
	}
	return c // "overage": no subscription window binds
}

// finish orders the windows, shortest first, and marks the binding one:
// the claimed window, else the windows of the active model (Codex's
// active limit, when it is a per-model one), else among the windows every
// model shares a rejected one, else the fullest. A per-model window binds
// otherwise only when no shared window is known: it limits its model, not
// the credential. An API's request and token buckets (no length) bind
// only when no timed window is known: upstreams send them to
// subscriptions too, and a per-minute bucket is not what limits a plan.
func finish(q *Quota, claimed, activeModel string) {
	slices.SortStableFunc(q.Windows, func(a, b Window) int {
		if (a.Length == 0) != (b.Length == 0) {
			return cmpBool(a.Length == 0, b.Length == 0) // unknown lengths last
		}
		return cmp.Or(cmp.Compare(a.Length, b.Length), strings.Compare(a.Name, b.Name))
	})
	for i, w := range q.Windows {
		if claimed != "" && w.Name == claimed {
			q.Windows[i].Binding = true
			return
		}
	}
	if activeModel != "" {
		for _, timed := range []bool{true, false} {
			if i := pick(q, func(w Window) bool { return w.Model == activeModel && (w.Length > 0) == timed }); i >= 0 {
				q.Windows[i].Binding = true
				return
			}
		}
	}
	for _, c := range []struct{ shared, timed bool }{{true, true}, {true, false}, {false, true}, {false, false}} {
		if i := pick(q, func(w Window) bool { return (w.Model == "") == c.shared && (w.Length > 0) == c.timed }); i >= 0 {
			q.Windows[i].Binding = true
			return
		}
	}
}

// pick returns the most limiting of the windows keep accepts: a rejected
// one before any other, then the fullest; ties go to the one that resets
// last, as it holds longest. -1 when there is none.
func pick(q *Quota, keep func(Window) bool) int {
	best := -1
	for i, w := range q.Windows {
		if !keep(w) {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := q.Windows[best]
		wRej, bRej := strings.EqualFold(w.Status, "rejected"), strings.EqualFold(b.Status, "rejected")
		switch {
		case wRej != bRej:
			if wRej {
				best = i
			}
		case !wRej && w.Used != b.Used:
			if w.Used > b.Used {
				best = i
			}
		case later(w, b):
			best = i
		}
	}
	return best
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// later: a resets after b (a window that never says when resets last).
func later(a, b Window) bool {
	switch {
	case b.ResetsAt == nil:
		return false
	case a.ResetsAt == nil:
		return true
	}
	return a.ResetsAt.After(*b.ResetsAt)
}

// fraction reads a used value on the given scale (1 for fractions, 100
// for percents). Values a little over full are real (Anthropic reports
// 1.08 on a rejected window, Codex 101%); past twice full they are not.
func fraction(s string, scale float64) (float64, bool) {
	n, ok := parseDecimal(s)
	if !ok || n/scale > 2 {
		return 0, false
	}
	return n / scale, true
}

// resetAt is now+d, or nil when d is no believable reset.
func resetAt(d time.Duration, now time.Time) *time.Time {
	if !believable(d) {
		return nil
	}
	t := now.Add(d)
	return &t
}

// believable: a time until a reset that is no garbage: in the future, and
// not absurdly far (MaxRetryAfter).
func believable(d time.Duration) bool {
	return d > 0 && d <= MaxRetryAfter
}

func parseBool(s string) (v, known bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1":
		return true, true
	case "false", "0":
		return false, true
	}
	return false, false
}

func isTrue(s string) bool {
	v, _ := parseBool(s)
	return v
}

// ReadClaudeUsage reads the answer of Claude's usage endpoint (GET
// {base}/api/oauth/usage with anthropic-beta: oauth-2025-04-20):
//
//	{"five_hour":{"utilization":33.0,"resets_at":"2026-04-11T07:00:00.528743+00:00"},
//	 "seven_day":{…}, "seven_day_sonnet":{…}, "seven_day_opus":null,
//	 "extra_usage":{"is_enabled":false,"monthly_limit":null,"used_credits":null,"utilization":null}}
//
// Utilization here is a percent, where the headers give a fraction.
// Windows are named as the headers name them: five_hour is "5h",
// seven_day_sonnet "7d_sonnet". Buckets under other names (internal code
// names) are left out. A body that is not such an object is an error.
func ReadClaudeUsage(body []byte, now time.Time) (Quota, error) {
	m := decodeObject(bytes.TrimSpace(body))
	if m == nil {
		return Quota{}, fmt.Errorf("claude usage: not a JSON object")
	}
	var q Quota
	for key, v := range m {
		obj, ok := v.(object)
		if !ok {
			continue
		}
		if key == "extra_usage" {
			q.ExtraUsage = claudeExtraUsage(obj)
			continue
		}
		name := claudeBucketName(key)
		if name == "" {
			continue
		}
		used, ok := fraction(scalar(obj["utilization"]), 100)
		if !ok {
			continue
		}
		w := Window{}
		w.Name, w.Used = name, used
		w.Length, w.Model = windowLength(name)
		if t, err := time.Parse(time.RFC3339Nano, scalar(obj["resets_at"])); err == nil {
			w.ResetsAt = resetAt(t.Sub(now), now)
		}
		q.Windows = append(q.Windows, w)
	}
	if len(q.Windows) == 0 && q.ExtraUsage == nil {
		return Quota{}, fmt.Errorf("claude usage: no window in the answer")
	}
	finish(&q, "", "")
	return q, nil
}

// claudeBucketName maps the usage endpoint's keys to window names.
func claudeBucketName(key string) string {
	switch {
	case key == "five_hour":
		return "5h"
	case key == "seven_day":
		return "7d"
	case strings.HasPrefix(key, "seven_day_"):
		model := strings.TrimPrefix(key, "seven_day_")
		if model == "overage_included" {
			model = "oi"
		}
		return "7d_" + model
	}
	return ""
}

func claudeExtraUsage(obj object) *ExtraUsage {
	e := &ExtraUsage{Used: -1}
	if b, ok := obj["is_enabled"].(bool); ok {
		e.Enabled = &b
	}
	if used, ok := fraction(scalar(obj["utilization"]), 100); ok {
		e.Used = used
	}
	return e
}

// ReadCodexUsage reads the answer of ChatGPT's usage endpoint (GET
// {chatgpt base}/wham/usage; openai/codex
// codex-rs/codex-backend-openapi-models RateLimitStatusPayload):
//
//	{"plan_type":"plus",
//	 "rate_limit":{"allowed":true,"limit_reached":false,
//	   "primary_window":{"used_percent":6,"limit_window_seconds":18000,"reset_after_seconds":…,"reset_at":…},
//	   "secondary_window":{…} or null},
//	 "additional_rate_limits":[{"limit_name":"GPT-5.3-Codex-Spark","rate_limit":{…}}] or null,
//	 "credits":{"has_credits":true,"unlimited":false,"balance":"5.39"}}
//
// Windows are named by limit_window_seconds, as ReadWindows names the
// header windows; a per-model limit's windows carry its limit_name.
func ReadCodexUsage(body []byte, now time.Time) (Quota, error) {
	m := decodeObject(bytes.TrimSpace(body))
	if m == nil {
		return Quota{}, fmt.Errorf("codex usage: not a JSON object")
	}
	var q Quota
	q.Plan = cleanStatus(scalar(m["plan_type"]))
	q.Windows = codexRateLimit(m["rate_limit"], "", now)
	if extra, ok := m["additional_rate_limits"].([]any); ok {
		for _, e := range extra {
			if obj, ok := e.(object); ok {
				name := scalar(obj["limit_name"])
				if name == "" {
					name = scalar(obj["metered_feature"])
				}
				if name != "" {
					q.Windows = append(q.Windows, codexRateLimit(obj["rate_limit"], name, now)...)
				}
			}
		}
	}
	if c, ok := m["credits"].(object); ok {
		has, _ := c["has_credits"].(bool)
		unlimited, _ := c["unlimited"].(bool)
		q.Credits = &Credits{HasCredits: has, Unlimited: unlimited, Balance: scalar(c["balance"])}
	}
	if len(q.Windows) == 0 && q.Credits == nil && q.Plan == "" {
		return Quota{}, fmt.Errorf("codex usage: no window in the answer")
	}
	finish(&q, "", "")
	return q, nil
}

func codexRateLimit(v any, model string, now time.Time) []Window {
	rl, ok := v.(object)
	if !ok {
		return nil
	}
	var out []Window
	for _, slot := range []string{"primary_window", "secondary_window"} {
		obj, ok := rl[slot].(object)
		if !ok {
			continue
		}
		used, ok := fraction(scalar(obj["used_percent"]), 100)
		if !ok {
			continue
		}
		var w Window
		w.Used, w.Model = used, model
		if s, err := strconv.ParseInt(scalar(obj["limit_window_seconds"]), 10, 64); err == nil && s > 0 && s <= 366*86400 {
			w.Length = time.Duration(s) * time.Second
			w.Name = nameOf(w.Length)
		} else {
			w.Name = strings.TrimSuffix(slot, "_window")
		}
		if model != "" {
			w.Name += "_" + strings.ToLower(model)
		}
		d := untilUnix(scalar(obj["reset_at"]), now)
		if d <= 0 {
			d = secondsDur(scalar(obj["reset_after_seconds"]))
		}
		w.ResetsAt = resetAt(d, now)
		// A window at its limit while the plan is refused is rejected.
		if reached, _ := rl["limit_reached"].(bool); reached && used >= 1 {
			w.Status = "rejected"
		}
		out = append(out, w)
	}
	return out
}

// ReadRateLimitEvent reads the quota a ChatGPT stream reports in its own
// event (openai/codex codex-rs/codex-api/src/rate_limits.rs,
// parse_rate_limit_event; the WebSocket transport has no headers to carry
// it, and the HTTP stream sends it too):
//
//	event: codex.rate_limits
//	data: {"type":"codex.rate_limits","plan_type":"pro",
//	       "rate_limits":{"allowed":true,"limit_reached":false,
//	         "primary":{"used_percent":7,"window_minutes":300,"reset_after_seconds":13168,"reset_at":1779398785},
//	         "secondary":{…} or null},
//	       "credits":{"has_credits":true,"unlimited":false,"balance":"5.39"} or null,
//	       "metered_limit_name":"codex_bengalfox" or absent}
//
// event is the SSE event's name ("" when it has none) and data its data.
// Any other event is answered at once with ok false, so the proxy may
// hand every event of a stream to it. Windows are named as ReadWindows
// names the x-codex-* headers: by their length, a per-model limit's
// windows carrying its name (metered_limit_name, else limit_name; "codex"
// is the plan's own). ok is false when the event reports nothing.
func ReadRateLimitEvent(event string, data []byte, now time.Time) (q Quota, ok bool) {
	const kind = "codex.rate_limits"
	if event != "" && event != kind || !bytes.Contains(data, []byte(kind)) {
		return Quota{}, false
	}
	m := decodeObject(bytes.TrimSpace(data))
	if m == nil || scalar(m["type"]) != kind {
		return Quota{}, false
	}
	q.Plan = cleanStatus(scalar(m["plan_type"]))
	// codex-rs: the limit id is metered_limit_name, else limit_name, else
	// the plan's own "codex"; "codex_bengalfox" is the family whose
	// headers are x-codex-bengalfox-*.
	id := scalar(m["metered_limit_name"])
	if id == "" {
		id = scalar(m["limit_name"])
	}
	family := ""
	if id = strings.ToLower(strings.TrimSpace(id)); id != "" && id != "codex" {
		family = strings.TrimPrefix(strings.ReplaceAll(id, "-", "_"), "codex_")
	}
	if rl, isObj := m["rate_limits"].(object); isObj {
		reached, _ := rl["limit_reached"].(bool)
		for _, slot := range []string{"primary", "secondary"} {
			obj, isObj := rl[slot].(object)
			if !isObj {
				continue
			}
			w := window{kind: kindCodex, name: slot, used: scalar(obj["used_percent"]),
				minutes: scalar(obj["window_minutes"]), reset: scalar(obj["reset_at"]),
				resetAfter: scalar(obj["reset_after_seconds"])}
			if family != "" {
				w.kind, w.name, w.family = kindCodexFamily, family+"-"+slot, family
			}
			out, reset, good := codexWindow(w, nil, now)
			if !good {
				continue
			}
			out.ResetsAt = resetAt(reset, now)
			// A window at its limit while the limit is reached is
			// rejected, as the usage endpoint's are.
			if reached && out.Used >= 1 {
				out.Status = "rejected"
			}
			q.Windows = append(q.Windows, out)
		}
	}
	if c, isObj := m["credits"].(object); isObj {
		has, ok1 := c["has_credits"].(bool)
		unlimited, ok2 := c["unlimited"].(bool)
		// Both flags or nothing, as codex-rs reads them.
		if ok1 && ok2 {
			q.Credits = &Credits{HasCredits: has, Unlimited: unlimited, Balance: scalar(c["balance"])}
		}
	}
	finish(&q, "", "")
	return q, len(q.Windows) > 0 || q.Credits != nil || q.Plan != ""
}

// cleanLimitID keeps a Codex limit id that is a plain identifier
// ("codex", "codex_bengalfox", "gpt-5" in one); anything else is dropped
// rather than shown in the status.
func cleanLimitID(s string) string {
	if len(s) > 64 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return ""
		}
	}
	return s
}
