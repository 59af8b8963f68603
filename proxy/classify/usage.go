package classify

import (
	"math"
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
	hs := headerState{usage: true}
	hs.read(h)
	// One allocation holds the answer and everything it points to; the
	// proxy reads utilization on every response.
	var out struct {
		u           api.Utilization
		five, seven api.Window
		t5, t7      time.Time
	}
	u := &out.u
	var five, seven *api.Window
	for i := 0; i < hs.n; i++ {
		w := &hs.w[i]
		switch w.kind {
		case kindUnified:
			switch {
			case w.name == "":
				u.Status = cleanStatus(w.level)
			// A usable unified window wins over a Codex one whichever
			// the map hands over first; an unusable one takes nothing.
			case equalFold(w.name, "5h"):
				if uw := usageWindow(w, 1, now, &out.five, &out.t5); uw != nil {
					five = uw
				}
			case equalFold(w.name, "7d"):
				if uw := usageWindow(w, 1, now, &out.seven, &out.t7); uw != nil {
					seven = uw
				}
			}
		case kindCodex:
			switch w.name {
			case "primary":
				if five == nil {
					five = usageWindow(w, 100, now, &out.five, &out.t5)
				}
			case "secondary":
				if seven == nil {
					seven = usageWindow(w, 100, now, &out.seven, &out.t7)
				}
			}
		}
	}
	if five == nil && seven == nil && u.Status == "" {
		return nil, false
	}
	u.FiveHour, u.SevenDay = five, seven
	u.UpdatedAt = now
	return u, true
}

// usageWindow fills dst from a used value on the given scale (1 for
// fractions, 100 for percents) and returns it, or nil when the value is
// unusable. Values a little over full are real (Anthropic reports 1.08 on
// a rejected window); past twice full they are not.
func usageWindow(w *window, scale float64, now time.Time, dst *api.Window, reset *time.Time) *api.Window {
	n, ok := parseDecimal(w.used)
	if !ok {
		return nil
	}
	used := n / scale
	if math.IsNaN(used) || used > 2 {
		return nil
	}
	*dst = api.Window{Used: used}
	if d := w.resetIn(now); d > 0 && d <= MaxRetryAfter {
		*reset = now.Add(d).Truncate(time.Second)
		dst.ResetsAt = reset
	}
	return dst
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
