package classify

import (
	"net/http"
	"testing"
	"time"
)

// BenchmarkClassify429 is one verdict on a subscription 429 with the
// headers Anthropic sends. The number is for the record, not a target: a
// verdict runs only on a refusal, next to a network call.
func BenchmarkClassify429(b *testing.B) {
	h := http.Header{}
	for _, kv := range [][2]string{
		{"Content-Type", "application/json"},
		{"Date", "Fri, 22 Nov 2024 13:44:10 GMT"},
		{"Request-Id", "req_01RCc7MbLyQNtGKzBTv8VCep"},
		{"Server", "cloudflare"},
		{"Cf-Ray", "8e695a03eed4f9fd-SJC"},
		{"Via", "1.1 google"},
		{"X-Should-Retry", "true"},
		{"Retry-After", "13262"},
		{"Anthropic-Ratelimit-Unified-Status", "rejected"},
		{"Anthropic-Ratelimit-Unified-5h-Status", "rejected"},
		{"Anthropic-Ratelimit-Unified-5h-Utilization", "1.08"},
		{"Anthropic-Ratelimit-Unified-5h-Reset", "1777936568"},
		{"Anthropic-Ratelimit-Unified-7d-Status", "allowed"},
		{"Anthropic-Ratelimit-Unified-7d-Utilization", "0.41"},
		{"Anthropic-Ratelimit-Unified-7d-Reset", "1778239400"},
		{"Anthropic-Ratelimit-Unified-Representative-Claim", "five_hour"},
	} {
		h.Set(kv[0], kv[1])
	}
	p := Lookup("anthropic")
	r := Response{Status: 429, Header: h, Body: []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."},"request_id":"req_011CWMy48MLiAUc9C2WYUgJW"}`)}
	now := time.Unix(1777922696, 0)
	b.ReportAllocs()
	for b.Loop() {
		Classify(p, r, now)
	}
}
