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
	// A value until the end: most answers (an API key's) report none, and
	// that costs no allocation.
	u := api.Utilization{Status: cleanStatus(unifiedStatus.in(h))}
	// In order of preference: a usable unified window wins over a Codex
	// one; an unusable one takes nothing.
	for _, s := range usageHeaders {
		slot := &u.FiveHour
		if s.sevenDay {
			slot = &u.SevenDay
		}
		if *slot != nil {
			continue
		}
		w := window{kind: s.kind, used: s.used.in(h), reset: s.reset.in(h), resetAfter: s.resetAfter.in(h)}
		scale := 1.0
		if s.kind == kindCodex {
			scale = 100 // percent
		}
		*slot = usageWindow(w, scale, now)
	}
	if u.FiveHour == nil && u.SevenDay == nil && u.Status == "" {
		return nil, false
	}
	u.UpdatedAt = now
	out := u
	return &out, true
}

var unifiedStatus = keyOf("anthropic-ratelimit-unified-status")

// usageHeaders are the windows ParseUtilization reads, most preferred
// first for each of FiveHour and SevenDay.
var usageHeaders = []struct {
	kind                    winKind
	sevenDay                bool
	used, reset, resetAfter headerKey // resetAfter: Codex only
}{
	{kindUnified, false, keyOf("anthropic-ratelimit-unified-5h-utilization"), keyOf("anthropic-ratelimit-unified-5h-reset"), headerKey{}},
	{kindUnified, true, keyOf("anthropic-ratelimit-unified-7d-utilization"), keyOf("anthropic-ratelimit-unified-7d-reset"), headerKey{}},
	{kindCodex, false, keyOf("x-codex-primary-used-percent"), keyOf("x-codex-primary-reset-at"), keyOf("x-codex-primary-reset-after-seconds")},
	{kindCodex, true, keyOf("x-codex-secondary-used-percent"), keyOf("x-codex-secondary-reset-at"), keyOf("x-codex-secondary-reset-after-seconds")},
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
