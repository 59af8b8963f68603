package metering

import "testing"

// The answers below are the size and shape the proxy meters on every
// request: a short non-streaming answer of each wire, and one streamed
// Messages answer event by event.

// messagesAnswer is an Anthropic Messages answer (about 400 bytes).
var messagesAnswer = []byte(`{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"The capital of France is Paris. It has been the capital since the 10th century."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":1800,"output_tokens":503,"service_tier":"standard"}}`)

// chatAnswer is an OpenAI Chat Completions answer.
var chatAnswer = []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"The capital of France is Paris.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":null}`)

func BenchmarkMeterJSON(b *testing.B) {
	for _, bb := range []struct {
		name string
		body []byte
		want Usage
	}{
		{"messages", messagesAnswer, Usage{Input: 2095, Output: 503, CacheRead: 1800}},
		{"chat", chatAnswer, Usage{Input: 19, Output: 10}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bb.body)))
			for b.Loop() {
				var m Meter
				m.JSON(bb.body)
				if m.Usage() != bb.want {
					b.Fatalf("usage = %+v, want %+v", m.Usage(), bb.want)
				}
			}
		})
	}
}

// messagesEvents is a short streamed Messages answer as the proxy's SSE
// reader hands it to the meter.
var messagesEvents = []struct {
	name string
	data []byte
}{
	{"message_start", []byte(`{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":1024,"cache_read_input_tokens":20480,"output_tokens":2,"service_tier":"standard"}}}`)},
	{"content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
	{"ping", []byte(`{"type": "ping"}`)},
	{"content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The capital of France"}}`)},
	{"content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" is Paris. It has been"}}`)},
	{"content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the capital since the 10th century."}}`)},
	{"content_block_stop", []byte(`{"type":"content_block_stop","index":0}`)},
	{"message_delta", []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":21}}`)},
	{"message_stop", []byte(`{"type":"message_stop"}`)},
}

// BenchmarkMeterEvent is one whole streamed answer per op.
func BenchmarkMeterEvent(b *testing.B) {
	want := Usage{Input: 472, Output: 21, CacheRead: 20480, CacheWrite: 1024}
	b.ReportAllocs()
	for b.Loop() {
		var m Meter
		for _, e := range messagesEvents {
			m.Event(e.name, e.data)
		}
		if m.Usage() != want {
			b.Fatalf("usage = %+v, want %+v", m.Usage(), want)
		}
	}
}
