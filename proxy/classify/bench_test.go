package classify

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// Benchmarks for the paths the proxy takes on every refusal and on the
// first event of every stream. Numbers go in the report, not in asserts.

var benchNow = time.Unix(1777922696, 0)

func benchHeader() http.Header {
	// A real Anthropic 429 carries a dozen headers besides the limits.
	return hdr(
		"Content-Type", "application/json",
		"Date", "Fri, 22 Nov 2024 13:44:10 GMT",
		"Request-Id", "req_01RCc7MbLyQNtGKzBTv8VCep",
		"Server", "cloudflare",
		"Cf-Ray", "8e695a03eed4f9fd-SJC",
		"Via", "1.1 google",
		"X-Should-Retry", "true",
		"Retry-After", "13262",
		"Anthropic-Ratelimit-Unified-Status", "rejected",
		"Anthropic-Ratelimit-Unified-5h-Status", "rejected",
		"Anthropic-Ratelimit-Unified-5h-Utilization", "1.08",
		"Anthropic-Ratelimit-Unified-5h-Reset", "1777936568",
		"Anthropic-Ratelimit-Unified-7d-Status", "allowed",
		"Anthropic-Ratelimit-Unified-7d-Utilization", "0.41",
		"Anthropic-Ratelimit-Unified-7d-Reset", "1778239400",
		"Anthropic-Ratelimit-Unified-Representative-Claim", "five_hour",
	)
}

func BenchmarkClassify429(b *testing.B) {
	p := Lookup("anthropic")
	r := Response{Status: 429, Header: benchHeader(), Body: []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."},"request_id":"req_011CWMy48MLiAUc9C2WYUgJW"}`)}
	b.ReportAllocs()
	for b.Loop() {
		Classify(p, r, benchNow)
	}
}

// BenchmarkClassify429FirstSight is BenchmarkClassify429 with a message
// the classifier has not seen: each of 2048 bodies names a different
// limit, more than the reason table holds, so every line is built and
// allocated. A pool refused again in the same words costs what
// BenchmarkClassify429 does.
func BenchmarkClassify429FirstSight(b *testing.B) {
	p := Lookup("anthropic")
	bodies := make([][]byte, 8*reasonSlots)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit of %d requests per minute."},"request_id":"req_011CWMy48MLiAUc9C2WYUgJW"}`, 1000+i)
	}
	r := Response{Status: 429, Header: benchHeader()}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Body = bodies[i%len(bodies)]
		Classify(p, r, benchNow)
		i++
	}
}

func BenchmarkClassify429NoHeaders(b *testing.B) {
	p := Lookup("anthropic")
	r := Response{Status: 429, Body: []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."},"request_id":"req_011CWMy48MLiAUc9C2WYUgJW"}`)}
	b.ReportAllocs()
	for b.Loop() {
		Classify(p, r, benchNow)
	}
}

func BenchmarkClassify429Codex(b *testing.B) {
	p := Lookup("openai")
	r := Response{Status: 429, Header: hdr(
		"X-Codex-Primary-Used-Percent", "100",
		"X-Codex-Secondary-Used-Percent", "80",
		"X-Codex-Primary-Reset-At", "1777936568",
		"X-Codex-Secondary-Reset-At", "1778239400",
	), Body: []byte(`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":1777936568,"eligible_promo":null,"resets_in_seconds":13872}}`)}
	b.ReportAllocs()
	for b.Loop() {
		Classify(p, r, benchNow)
	}
}

func BenchmarkClassifyZai(b *testing.B) {
	p := Lookup("zai")
	r := Response{Status: 429, Header: hdr("Retry-After-Ms", "997000"), Body: []byte(`{"type":"error","error":{"type":"rate_limit_error","code":"1308","message":"[1308][Usage limit reached for 5 hour. Your limit will reset at 2026-09-12 00:35:41][20260912001903b4955568412247d7]"},"request_id":"20260912001903b4955568412247d7"}`)}
	b.ReportAllocs()
	for b.Loop() {
		Classify(p, r, benchNow)
	}
}

func BenchmarkClassifyOK(b *testing.B) {
	p := Lookup("anthropic")
	r := Response{Status: 200, Header: benchHeader()}
	b.ReportAllocs()
	for b.Loop() {
		Classify(p, r, benchNow)
	}
}

func BenchmarkClassifyEventContent(b *testing.B) {
	p := Lookup("openai")
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`)
	b.ReportAllocs()
	for b.Loop() {
		ClassifyEvent(p, "", data, benchNow)
	}
}

func BenchmarkClassifyEventError(b *testing.B) {
	p := Lookup("anthropic")
	data := []byte(`{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`)
	b.ReportAllocs()
	for b.Loop() {
		ClassifyEvent(p, "error", data, benchNow)
	}
}

func BenchmarkParseUtilization(b *testing.B) {
	h := benchHeader()
	b.ReportAllocs()
	for b.Loop() {
		ParseUtilization(h, benchNow)
	}
}
