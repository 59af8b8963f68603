package classify

import (
	"net/http"
	"testing"
	"time"
)

// The proxy reads every answer's windows (ReadWindows): what that costs
// per answer.
func benchHeaders() http.Header {
	h := http.Header{}
	for k, v := range map[string]string{
		"Content-Type": "application/json", "Request-Id": "req_011CV", "Anthropic-Organization-Id": "org",
		"Anthropic-Ratelimit-Unified-Status": "allowed", "Anthropic-Ratelimit-Unified-5h-Status": "allowed",
		"Anthropic-Ratelimit-Unified-5h-Reset": "1788586800", "Anthropic-Ratelimit-Unified-5h-Utilization": "0.11",
		"Anthropic-Ratelimit-Unified-7d-Status": "allowed", "Anthropic-Ratelimit-Unified-7d-Reset": "1788937200",
		"Anthropic-Ratelimit-Unified-7d-Utilization": "0.02", "Anthropic-Ratelimit-Unified-Representative-Claim": "five_hour",
		"Anthropic-Ratelimit-Unified-Reset": "1788586800", "Cf-Ray": "abc", "Server": "cloudflare", "Date": "x", "Via": "1.1 google",
	} {
		h.Set(k, v)
	}
	return h
}

func BenchmarkReadWindowsSuccess(b *testing.B) {
	h, now := benchHeaders(), time.Unix(1788570000, 0)
	b.ReportAllocs()
	for b.Loop() {
		ReadWindows(h, now)
	}
}
