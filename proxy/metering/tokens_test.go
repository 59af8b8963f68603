package metering

import (
	"strings"
	"testing"
)

// sse is one event as the proxy's reader hands it over.
type sse struct{ name, data string }

// parseSSE splits a captured stream into events, the way the proxy's
// reader does, so samples can be pasted as they come off the wire.
func parseSSE(t *testing.T, stream string) []sse {
	t.Helper()
	var out []sse
	for _, block := range strings.Split(strings.TrimSpace(stream), "\n\n") {
		var e sse
		for _, line := range strings.Split(block, "\n") {
			line = strings.TrimSpace(line)
			if v, ok := strings.CutPrefix(line, "event:"); ok {
				e.name = strings.TrimSpace(v)
			} else if v, ok := strings.CutPrefix(line, "data:"); ok {
				e.data = strings.TrimSpace(v)
			}
		}
		out = append(out, e)
	}
	return out
}

// Shapes follow the providers' API references: Anthropic Messages
// streaming, OpenAI Responses streaming and Chat Completions with
// stream_options.include_usage.
const anthropicStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":1024,"cache_read_input_tokens":20480,"output_tokens":2}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, \"usage\": {"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":472,"cache_creation_input_tokens":1024,"cache_read_input_tokens":20480,"output_tokens":318}}

event: message_stop
data: {"type":"message_stop"}`

const responsesStream = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5.1-codex","output":[],"usage":null}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}

event: response.completed
data: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","object":"response","status":"completed","model":"gpt-5.1-codex","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],"usage":{"input_tokens":9000,"input_tokens_details":{"cached_tokens":8192},"output_tokens":420,"output_tokens_details":{"reasoning_tokens":384},"total_tokens":9420}}}`

const chatStream = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}

data: [DONE]`

func TestStreams(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		cut    int // feed only the first cut events (0: all)
		want   Usage
		seen   bool
	}{
		// message_start gives the prompt; the last message_delta the
		// final output (later values win, output grows).
		{"anthropic", anthropicStream, 0, Usage{Input: 472, Output: 318, CacheRead: 20480, CacheWrite: 1024}, true},
		// A stream cut after its first delta keeps what was reported then.
		{"anthropic cut early", anthropicStream, 6, Usage{Input: 472, Output: 15, CacheRead: 20480, CacheWrite: 1024}, true},
		// Cut before any output: message_start's prompt and its 2 tokens.
		{"anthropic cut after start", anthropicStream, 1, Usage{Input: 472, Output: 2, CacheRead: 20480, CacheWrite: 1024}, true},
		// Responses: cached_tokens are inside input_tokens; Input is the rest.
		{"responses", responsesStream, 0, Usage{Input: 808, Output: 420, CacheRead: 8192}, true},
		{"responses cut before completed", responsesStream, 2, Usage{}, false},
		// Chat: usage only in the last chunk; "usage":null before it.
		{"chat", chatStream, 0, Usage{Input: 86, Output: 300, CacheRead: 1920}, true},
		{"chat cut before usage chunk", chatStream, 3, Usage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := parseSSE(t, tt.stream)
			if tt.cut > 0 {
				evs = evs[:tt.cut]
			}
			var m Meter
			for _, e := range evs {
				m.Event(e.name, []byte(e.data))
			}
			if got := m.Usage(); got != tt.want {
				t.Errorf("usage = %+v, want %+v", got, tt.want)
			}
			if m.Seen() != tt.seen {
				t.Errorf("seen = %v, want %v", m.Seen(), tt.seen)
			}
		})
	}
}

// A client that strips event names (or a proxy in front that does) still
// gets its Messages and Responses usage counted from the data's type.
func TestStreamsWithoutEventNames(t *testing.T) {
	for _, tt := range []struct {
		name, stream string
		want         Usage
	}{
		{"anthropic", anthropicStream, Usage{Input: 472, Output: 318, CacheRead: 20480, CacheWrite: 1024}},
		{"responses", responsesStream, Usage{Input: 808, Output: 420, CacheRead: 8192}},
	} {
		var m Meter
		for _, e := range parseSSE(t, tt.stream) {
			m.Event("", []byte(e.data))
		}
		if got := m.Usage(); got != tt.want {
			t.Errorf("%s: usage = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name, body string
		want       Usage
	}{
		{"anthropic messages", `{"id":"msg_01","type":"message","role":"assistant","model":"claude-opus-4-5","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":1800,"output_tokens":503,"service_tier":"standard"}}`,
			Usage{Input: 2095, Output: 503, CacheRead: 1800}},
		{"anthropic without cache fields", `{"type":"message","usage":{"input_tokens":12,"output_tokens":6}}`,
			Usage{Input: 12, Output: 6}},
		{"responses", `{"id":"resp_1","object":"response","status":"completed","model":"gpt-5.1","output":[],"usage":{"input_tokens":328,"input_tokens_details":{"cached_tokens":128},"output_tokens":52,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":380}}`,
			Usage{Input: 200, Output: 52, CacheRead: 128}},
		{"chat completions", `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0}}}`,
			Usage{Input: 19, Output: 10}},
		{"embeddings", `{"object":"list","data":[],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`,
			Usage{Input: 8}},
		{"error body", `{"type":"error","error":{"type":"rate_limit_error","message":"usage limit"}}`, Usage{}},
		{"not json", `<html>502</html>`, Usage{}},
	}
	for _, tt := range tests {
		var m Meter
		m.JSON([]byte(tt.body))
		if got := m.Usage(); got != tt.want {
			t.Errorf("%s: usage = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestClientApp(t *testing.T) {
	for ua, want := range map[string]string{
		"claude-cli/2.0.14 (external, cli)":                        AppClaudeCode,
		"codex_cli_rs/0.46.0 (Mac OS 15.1.0; arm64) iTerm.app/3.5": AppCodex,
		"codex_exec/0.46.0 (Ubuntu 24.4.0; x86_64)":                AppCodex,
		"opencode/0.15.8 ai-sdk/provider-utils/3.0.10":             AppOpenCode,
		"Aider/0.86.1": AppAider,
		"GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64; terminal)":   AppGeminiCLI,
		"GeminiCLI-vscode/0.61.0/gpt-5-codex (darwin; arm64; ide)": AppGeminiCLI,
		"Anthropic/Python 0.40.0":                                  AppOther,
		"":                                                         AppOther,
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36": AppOther,
	} {
		if got := ClientApp(ua); got != want {
			t.Errorf("ClientApp(%q) = %q, want %q", ua, got, want)
		}
	}
}

// Most events of a long stream are text deltas; they must cost next to
// nothing, since the meter sees every one.
func BenchmarkDelta(b *testing.B) {
	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"some generated words here"}}`)
	var m Meter
	b.ReportAllocs()
	for b.Loop() {
		m.Event("content_block_delta", data)
	}
}

func BenchmarkChatChunk(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}`)
	var m Meter
	b.ReportAllocs()
	for b.Loop() {
		m.Event("", data)
	}
}

func TestGeminiUsage(t *testing.T) {
	cases := []struct {
		name string
		feed func(m *Meter)
		want Usage
	}{
		{"json", func(m *Meter) {
			m.JSON([]byte(`{"candidates":[{"content":{"parts":[{"text":"hi"}]}}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":7,"cachedContentTokenCount":100,"thoughtsTokenCount":3,"totalTokenCount":130}}`))
		}, Usage{Input: 20, Output: 10, CacheRead: 100}},
		{"stream keeps the last chunk", func(m *Meter) {
			m.Event("", []byte(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":1}}`))
			m.Event("", []byte(`{"candidates":[{"content":{"parts":[{"text":"b"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":4}}`))
		}, Usage{Input: 9, Output: 4}},
		{"code assist envelope", func(m *Meter) {
			m.Event("", []byte(`{"response":{"candidates":[],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2}},"traceId":"x"}`))
		}, Usage{Input: 5, Output: 2}},
		{"bad count drops the object", func(m *Meter) {
			m.JSON([]byte(`{"usageMetadata":{"promptTokenCount":"5","candidatesTokenCount":2}}`))
		}, Usage{}},
	}
	for _, c := range cases {
		var m Meter
		c.feed(&m)
		if got := m.Usage(); got != c.want {
			t.Errorf("%s: usage = %+v, want %+v", c.name, got, c.want)
		}
	}
}
