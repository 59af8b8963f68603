package classify

import (
	"net/http"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// ParseUtilization reads the subscription usage an upstream reports on
// every response, for selection to prefer the credential with the most
// headroom:
//
//	anthropic-ratelimit-unified-5h-utilization   fraction 0..1, 5h-reset unix seconds
//	anthropic-ratelimit-unified-7d-utilization   likewise for the week
//	anthropic-ratelimit-unified-status           allowed, allowed_warning, rejected
//	x-codex-primary-used-percent                 0..100, -reset-at unix seconds or -reset-after-seconds
//	x-codex-secondary-used-percent               likewise
//
// A Codex primary window maps to FiveHour and secondary to SevenDay, as
// api.Utilization says, whatever their lengths. ok is false when the
// headers say nothing usable. Garbage values are dropped, not guessed.
func ParseUtilization(h http.Header, now time.Time) (*api.Utilization, bool) {
	if len(h) == 0 {
		return nil, false
	}
	hs := readHeaders(h)
	u := &api.Utilization{}
	// A usable unified window wins over a Codex one, whatever order the
	// header map hands them over in; an unusable one takes nothing.
	for _, w := range hs.w {
		switch {
		case w.kind == kindUnified && w.name == "":
			u.Status = cleanStatus(w.level)
		case w.kind == kindUnified && w.name == "5h":
			u.FiveHour = usageWindow(w, 1, now)
		case w.kind == kindUnified && w.name == "7d":
			u.SevenDay = usageWindow(w, 1, now)
		}
	}
	for _, w := range hs.w {
		switch {
		case w.kind == kindCodex && w.name == "primary" && u.FiveHour == nil:
			u.FiveHour = usageWindow(w, 100, now)
		case w.kind == kindCodex && w.name == "secondary" && u.SevenDay == nil:
			u.SevenDay = usageWindow(w, 100, now)
		}
	}
	if u.FiveHour == nil && u.SevenDay == nil && u.Status == "" {
		return nil, false
	}
	u.UpdatedAt = now
	return u, true
}

// usageWindow reads a used value on the given scale (1 for fractions, 100
// for percents), or returns nil when the value is unusable. Values a
// little over full are real (Anthropic reports 1.08 on a rejected window);
// past twice full they are not.
func usageWindow(w window, scale float64, now time.Time) *api.Window {
	n, ok := parseDecimal(w.used)
	if !ok || n/scale > 2 {
		return nil
	}
	out := &api.Window{Used: n / scale}
	if d := w.resetIn(now); d > 0 && d <= MaxRetryAfter {
		at := now.Add(d).Truncate(time.Second)
		out.ResetsAt = &at
	}
	return out
}

// cleanStatus keeps the upstream's own word if it is a word.
func cleanStatus(s string) string {
	if len(s) > 32 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			return ""
		}
	}
	return s
}
