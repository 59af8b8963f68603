package classify

import (
	"net/http"
	"testing"
	"time"
)

func TestParseBudget(t *testing.T) {
	at := func(d time.Duration) string { return testNow.Add(d).Format(time.RFC3339) }
	type want struct {
		n     int
		reset time.Duration // from testNow
		ok    bool
	}
	cases := []struct {
		name string
		h    http.Header
		want want
	}{
		{"anthropic success", hdr(
			"anthropic-ratelimit-requests-limit", "50",
			"anthropic-ratelimit-requests-remaining", "49",
			"anthropic-ratelimit-requests-reset", at(time.Minute),
			"anthropic-ratelimit-tokens-remaining", "3",
			"anthropic-ratelimit-tokens-reset", at(time.Second),
		), want{49, time.Minute, true}},
		{"anthropic refusal", hdr(
			"retry-after", "40",
			"anthropic-ratelimit-requests-remaining", "0",
			"anthropic-ratelimit-requests-reset", at(40*time.Second),
		), want{0, 40 * time.Second, true}},
		{"openai minutes", hdr(
			"x-ratelimit-remaining-requests", "499",
			"x-ratelimit-reset-requests", "6m0s",
			"x-ratelimit-remaining-tokens", "0",
			"x-ratelimit-reset-tokens", "1s",
		), want{499, 6 * time.Minute, true}},
		{"openai milliseconds", hdr(
			"x-ratelimit-remaining-requests", "2",
			"x-ratelimit-reset-requests", "20ms",
		), want{2, 20 * time.Millisecond, true}},
		{"openai bare seconds", hdr(
			"x-ratelimit-remaining-requests", "7",
			"x-ratelimit-reset-requests", "1.5",
		), want{7, 1500 * time.Millisecond, true}},
		{"hand-built lower-case keys", http.Header{
			"anthropic-ratelimit-requests-remaining": {" 3 "},
			"anthropic-ratelimit-requests-reset":     {at(time.Minute)},
		}, want{3, time.Minute, true}},
		{"the tighter family wins", hdr(
			"anthropic-ratelimit-requests-remaining", "9",
			"anthropic-ratelimit-requests-reset", at(time.Minute),
			"x-ratelimit-remaining-requests", "4",
			"x-ratelimit-reset-requests", "30s",
		), want{4, 30 * time.Second, true}},

		{"none", hdr("content-type", "application/json"), want{}},
		{"nil", nil, want{}},
		{"tokens only", hdr(
			"anthropic-ratelimit-tokens-remaining", "0",
			"anthropic-ratelimit-tokens-reset", at(time.Minute),
		), want{}},
		{"subscription usage is no count", hdr(
			"anthropic-ratelimit-unified-status", "allowed",
			"anthropic-ratelimit-unified-5h-utilization", "0.4",
			"anthropic-ratelimit-unified-5h-reset", "1788586800",
		), want{}},
		{"no reset", hdr("anthropic-ratelimit-requests-remaining", "5"), want{}},
		{"no count", hdr("anthropic-ratelimit-requests-reset", at(time.Minute)), want{}},
		{"negative count", hdr(
			"x-ratelimit-remaining-requests", "-1",
			"x-ratelimit-reset-requests", "1s",
		), want{}},
		{"fractional count", hdr(
			"x-ratelimit-remaining-requests", "1.5",
			"x-ratelimit-reset-requests", "1s",
		), want{}},
		{"exponent", hdr(
			"x-ratelimit-remaining-requests", "1e3",
			"x-ratelimit-reset-requests", "1s",
		), want{}},
		{"huge count", hdr(
			"x-ratelimit-remaining-requests", "99999999999999999999",
			"x-ratelimit-reset-requests", "1s",
		), want{}},
		{"reset not a time", hdr(
			"anthropic-ratelimit-requests-remaining", "5",
			"anthropic-ratelimit-requests-reset", "soon",
		), want{}},
		{"reset passed", hdr(
			"anthropic-ratelimit-requests-remaining", "0",
			"anthropic-ratelimit-requests-reset", at(-time.Second),
		), want{}},
		{"reset now", hdr(
			"x-ratelimit-remaining-requests", "0",
			"x-ratelimit-reset-requests", "0s",
		), want{}},
		{"reset absurd", hdr(
			"anthropic-ratelimit-requests-remaining", "0",
			"anthropic-ratelimit-requests-reset", at(MaxRetryAfter+time.Hour),
		), want{}},
		{"garbage beside a good family", hdr(
			"anthropic-ratelimit-requests-remaining", "NaN",
			"anthropic-ratelimit-requests-reset", at(time.Minute),
			"x-ratelimit-remaining-requests", "8",
			"x-ratelimit-reset-requests", "1m",
		), want{8, time.Minute, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, reset, ok := ParseBudget(c.h, testNow)
			if ok != c.want.ok {
				t.Fatalf("ok = %v (%d, %v), want %v", ok, n, reset, c.want.ok)
			}
			if !ok {
				if n != 0 || !reset.IsZero() {
					t.Fatalf("not ok, yet (%d, %v)", n, reset)
				}
				return
			}
			if n != c.want.n || !reset.Equal(testNow.Add(c.want.reset)) {
				t.Fatalf("(%d, %v), want (%d, %v)", n, reset, c.want.n, testNow.Add(c.want.reset))
			}
		})
	}
}
