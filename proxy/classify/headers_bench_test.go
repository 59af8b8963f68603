package classify_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/classify"
)

// BenchmarkSuccessHeaders is the request budget the proxy reads off every
// 2xx (its windows are BenchmarkReadWindowsSuccess), from an API key's answer
// (request and token buckets, no usage) as the real API and internal/sim
// send it.
func BenchmarkSuccessHeaders(b *testing.B) {
	h, now := successHeaders()
	if n, _, ok := classify.ParseBudget(h, now); !ok || n != 49 {
		b.Fatalf("budget %d %v", n, ok)
	}
	b.ReportAllocs()
	for b.Loop() {
		classify.ParseBudget(h, now)
	}
}

// BenchmarkReadWindowsAPIKey is ReadWindows on the same answer: every
// window the headers report.
func BenchmarkReadWindowsAPIKey(b *testing.B) {
	h, now := successHeaders()
	if _, ok := classify.ReadWindows(h, now); !ok {
		b.Fatal("no windows")
	}
	b.ReportAllocs()
	for b.Loop() {
		classify.ReadWindows(h, now)
	}
}

func successHeaders() (http.Header, time.Time) {
	now := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	h := http.Header{}
	for _, kv := range [][2]string{
		{"Content-Type", "application/json"},
		{"Date", "Sun, 01 Mar 2026 12:00:30 GMT"},
		{"Request-Id", "req_011CWMy48MLiAUc9C2WYUgJW"},
		{"Server", "cloudflare"},
		{"Cf-Ray", "8e695a03eed4f9fd-SJC"},
		{"Anthropic-Ratelimit-Requests-Limit", "50"},
		{"Anthropic-Ratelimit-Requests-Remaining", "49"},
		{"Anthropic-Ratelimit-Requests-Reset", "2026-03-01T12:01:00Z"},
		{"Anthropic-Ratelimit-Tokens-Limit", "40000"},
		{"Anthropic-Ratelimit-Tokens-Remaining", "38000"},
		{"Anthropic-Ratelimit-Tokens-Reset", "2026-03-01T12:00:31Z"},
		{"Anthropic-Ratelimit-Input-Tokens-Limit", "40000"},
		{"Anthropic-Ratelimit-Input-Tokens-Remaining", "38000"},
		{"Anthropic-Ratelimit-Input-Tokens-Reset", "2026-03-01T12:00:31Z"},
		{"Anthropic-Ratelimit-Output-Tokens-Limit", "8000"},
		{"Anthropic-Ratelimit-Output-Tokens-Remaining", "8000"},
		{"Anthropic-Ratelimit-Output-Tokens-Reset", "2026-03-01T12:00:31Z"},
	} {
		h.Set(kv[0], kv[1])
	}
	return h, now
}
