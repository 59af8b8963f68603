package classify_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/classify"
)

// BenchmarkMicroClassify429 is the verdict the proxy computes on the most
// common refusal: an Anthropic API key over its per-minute request limit,
// with the headers and body the API sends (and internal/sim replays). It is
// the "classify" row of docs/benchmarks.md.
func BenchmarkMicroClassify429(b *testing.B) {
	r, p, now := micro429()
	if v := classify.Classify(p, r, now); v.Class != classify.RateLimit || v.RetryAfter != 30*time.Second {
		b.Fatalf("verdict %+v", v)
	}
	b.ReportAllocs()
	for b.Loop() {
		classify.Classify(p, r, now)
	}
}

func micro429() (classify.Response, *classify.Profile, time.Time) {
	now := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	h := http.Header{}
	for _, kv := range [][2]string{
		{"Content-Type", "application/json"},
		{"Date", "Sun, 01 Mar 2026 12:00:30 GMT"},
		{"Request-Id", "req_011CWMy48MLiAUc9C2WYUgJW"},
		{"Server", "cloudflare"},
		{"Cf-Ray", "8e695a03eed4f9fd-SJC"},
		{"X-Should-Retry", "true"},
		{"Retry-After", "30"},
		{"Anthropic-Ratelimit-Requests-Limit", "50"},
		{"Anthropic-Ratelimit-Requests-Remaining", "0"},
		{"Anthropic-Ratelimit-Requests-Reset", "2026-03-01T12:01:00Z"},
		{"Anthropic-Ratelimit-Tokens-Limit", "40000"},
		{"Anthropic-Ratelimit-Tokens-Remaining", "38000"},
		{"Anthropic-Ratelimit-Tokens-Reset", "2026-03-01T12:00:31Z"},
	} {
		h.Set(kv[0], kv[1])
	}
	r := classify.Response{Status: 429, Header: h, Body: []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."},"request_id":"req_011CWMy48MLiAUc9C2WYUgJW"}`)}
	return r, classify.Lookup("anthropic"), now
}
