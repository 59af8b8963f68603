package classify

import (
	"net/http"
	"testing"
	"time"
)

// budgetWant is what ParseBudget should read.
type budgetWant struct {
	n     int
	reset time.Duration // from testNow
	ok    bool
}

// parseBudgetCases are the rows of TestParseBudget.
func parseBudgetCases() []parseBudgetCase {
	at := func(d time.Duration) string { return testNow.Add(d).Format(time.RFC3339) }
	return append([]parseBudgetCase{
		{"anthropic success", hdr(
			"anthropic-ratelimit-requests-limit", "50",
			"anthropic-ratelimit-requests-remaining", "49",
			"anthropic-ratelimit-requests-reset", at(time.Minute),
			"anthropic-ratelimit-tokens-remaining", "3",
			"anthropic-ratelimit-tokens-reset", at(time.Second),
		), budgetWant{49, time.Minute, true}},
		{"anthropic refusal", hdr(
			"retry-after", "40",
			"anthropic-ratelimit-requests-remaining", "0",
			"anthropic-ratelimit-requests-reset", at(40*time.Second),
		), budgetWant{0, 40 * time.Second, true}},
		{"openai minutes", hdr(
			"x-ratelimit-remaining-requests", "499",
			"x-ratelimit-reset-requests", "6m0s",
			"x-ratelimit-remaining-tokens", "0",
			"x-ratelimit-reset-tokens", "1s",
		), budgetWant{499, 6 * time.Minute, true}},
		{"openai milliseconds", hdr(
			"x-ratelimit-remaining-requests", "2",
			"x-ratelimit-reset-requests", "20ms",
		), budgetWant{2, 20 * time.Millisecond, true}},
		{"openai bare seconds", hdr(
			"x-ratelimit-remaining-requests", "7",
			"x-ratelimit-reset-requests", "1.5",
		), budgetWant{7, 1500 * time.Millisecond, true}},
		{"hand-built lower-case keys", http.Header{
			"anthropic-ratelimit-requests-remaining": {" 3 "},
			"anthropic-ratelimit-requests-reset":     {at(time.Minute)},
		}, budgetWant{3, time.Minute, true}},
		{"the tighter family wins", hdr(
			"anthropic-ratelimit-requests-remaining", "9",
			"anthropic-ratelimit-requests-reset", at(time.Minute),
			"x-ratelimit-remaining-requests", "4",
			"x-ratelimit-reset-requests", "30s",
		), budgetWant{4, 30 * time.Second, true}},
	}, unreadBudgetCases()...)
}

// unreadBudgetCases are the rows ParseBudget must not read.
func unreadBudgetCases() []parseBudgetCase {
	at := func(d time.Duration) string { return testNow.Add(d).Format(time.RFC3339) }
	return []parseBudgetCase{
		{"none", hdr("content-type", "application/json"), budgetWant{}},
		{"nil", nil, budgetWant{}},
		{"tokens only", hdr(
			"anthropic-ratelimit-tokens-remaining", "0",
			"anthropic-ratelimit-tokens-reset", at(time.Minute),
		), budgetWant{}},
		{"subscription usage is no count", hdr(
			"anthropic-ratelimit-unified-status", "allowed",
			"anthropic-ratelimit-unified-5h-utilization", "0.4",
			"anthropic-ratelimit-unified-5h-reset", "1788586800",
		), budgetWant{}},
		{"no reset", hdr("anthropic-ratelimit-requests-remaining", "5"), budgetWant{}},
		{"no count", hdr("anthropic-ratelimit-requests-reset", at(time.Minute)), budgetWant{}},
		{"negative count", hdr(
			"x-ratelimit-remaining-requests", "-1",
			"x-ratelimit-reset-requests", "1s",
		), budgetWant{}},
		{"fractional count", hdr(
			"x-ratelimit-remaining-requests", "1.5",
			"x-ratelimit-reset-requests", "1s",
		), budgetWant{}},
		{"exponent", hdr(
			"x-ratelimit-remaining-requests", "1e3",
			"x-ratelimit-reset-requests", "1s",
		), budgetWant{}},
		{"huge count", hdr(
			"x-ratelimit-remaining-requests", "99999999999999999999",
			"x-ratelimit-reset-requests", "1s",
		), budgetWant{}},
		{"reset not a time", hdr(
			"anthropic-ratelimit-requests-remaining", "5",
			"anthropic-ratelimit-requests-reset", "soon",
		), budgetWant{}},
		{"reset passed", hdr(
			"anthropic-ratelimit-requests-remaining", "0",
			"anthropic-ratelimit-requests-reset", at(-time.Second),
		), budgetWant{}},
		{"reset now", hdr(
			"x-ratelimit-remaining-requests", "0",
			"x-ratelimit-reset-requests", "0s",
		), budgetWant{}},
		{"reset absurd", hdr(
			"anthropic-ratelimit-requests-remaining", "0",
			"anthropic-ratelimit-requests-reset", at(MaxRetryAfter+time.Hour),
		), budgetWant{}},
		{"garbage beside a good family", hdr(
			"anthropic-ratelimit-requests-remaining", "NaN",
			"anthropic-ratelimit-requests-reset", at(time.Minute),
			"x-ratelimit-remaining-requests", "8",
			"x-ratelimit-reset-requests", "1m",
		), budgetWant{8, time.Minute, true}},
	}
}

type parseBudgetCase struct {
	name string
	h    http.Header
	want budgetWant
}

func TestParseBudget(t *testing.T) {
	cases := parseBudgetCases()
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
