package classify

import (
	"math"
	"net/http"
	"time"
)

// maxBudget bounds a believable remaining count: far above any tier's
// requests per window, and small enough to stay exact in a float64 and
// an int on every platform.
const maxBudget = 1 << 30

// ParseBudget reads the request budget an API key's answer reports, on
// successes and refusals alike:
//
//	anthropic-ratelimit-requests-remaining   requests left; -reset RFC 3339
//	x-ratelimit-remaining-requests           likewise; -reset-requests a duration ("6m0s", "20ms")
//
// reset is when the budget refills. ok is false when the answer reports
// none, or reports one that cannot be trusted: a count that is not a
// whole number, a reset that does not parse, has passed or is absurdly far
// (MaxRetryAfter). A reset already passed says nothing about the window
// the next request meets. When both families are present (a compatible
// server sending each), the smaller remaining count binds first and wins.
//
// Subscriptions report usage, not counts (ReadWindows); token
// budgets are not read.
func ParseBudget(h http.Header, now time.Time) (remaining int, reset time.Time, ok bool) {
	if len(h) == 0 {
		return 0, time.Time{}, false
	}
	for _, b := range budgetHeaders {
		n, good := parseDecimal(b.remaining.in(h))
		if !good || n > maxBudget || n != math.Trunc(n) {
			continue // no count to trust: its reset is not looked up
		}
		w := window{kind: b.kind, name: "requests", reset: b.reset.in(h)}
		d := w.resetIn(now)
		if d <= 0 || d > MaxRetryAfter {
			continue
		}
		at := now.Add(d)
		if !ok || int(n) < remaining || (int(n) == remaining && at.After(reset)) {
			remaining, reset, ok = int(n), at, true
		}
	}
	return remaining, reset, ok
}

// budgetHeaders are the request-count families ParseBudget reads.
var budgetHeaders = []struct {
	kind             winKind
	remaining, reset headerKey
}{
	{kindAPI, keyOf("anthropic-ratelimit-requests-remaining"), keyOf("anthropic-ratelimit-requests-reset")},
	{kindOpenAI, keyOf("x-ratelimit-remaining-requests"), keyOf("x-ratelimit-reset-requests")},
}
