package translate

import (
	"bytes"
	"strings"
	"testing"
)

// ev builds one upstream event; chat events have no name.
func ev(name, data string) sseEvent { return sseEvent{name, []byte(data)} }

const (
	chatRole  = `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	chatFirst = `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"FIRST"},"finish_reason":null}]}`
	chatLater = `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"LATER"},"finish_reason":null}]}`
	chatStop  = `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`

	respCreated = `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}`
	respItem    = `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`
	respFirst   = `{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"FIRST"}`
	respLater   = `{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"LATER"}`
	respDone    = `{"type":"response.completed","sequence_number":4,"response":{"id":"resp_1","status":"completed","output":[],"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}}`

	antStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}`
	antBlock = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	antFirst = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"FIRST"}}`
	antLater = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"LATER"}}`
	antStop  = `{"type":"content_block_stop","index":0}`
	antDelta = `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`
	antEnd   = `{"type":"message_stop"}`

	gemFirst = `{"candidates":[{"content":{"parts":[{"text":"FIRST"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
	gemLater = `{"candidates":[{"content":{"parts":[{"text":"LATER"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
	gemStop  = `{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
)

// upstream streams of every wire: a prefix up to and including the
// first delta, then the rest.
var incremental = []struct {
	from        Target
	head, tail  []sseEvent
	partialTail []sseEvent // the rest, cut before the end
}{
	{OpenAIChat,
		[]sseEvent{ev("", chatRole), ev("", chatFirst)},
		[]sseEvent{ev("", chatLater), ev("", chatStop), ev("", "[DONE]")},
		[]sseEvent{ev("", chatLater)}},
	{OpenAIResponses,
		[]sseEvent{ev("response.created", respCreated), ev("response.output_item.added", respItem), ev("response.output_text.delta", respFirst)},
		[]sseEvent{ev("response.output_text.delta", respLater), ev("response.completed", respDone)},
		[]sseEvent{ev("response.output_text.delta", respLater)}},
	{Anthropic,
		[]sseEvent{ev("message_start", antStart), ev("content_block_start", antBlock), ev("content_block_delta", antFirst)},
		[]sseEvent{ev("content_block_delta", antLater), ev("content_block_stop", antStop), ev("message_delta", antDelta), ev("message_stop", antEnd)},
		[]sseEvent{ev("content_block_delta", antLater)}},
	{Gemini,
		[]sseEvent{ev("", gemFirst)},
		[]sseEvent{ev("", gemLater), ev("", gemStop)},
		[]sseEvent{ev("", gemLater)}},
	{GeminiCodeAssist,
		[]sseEvent{ev("", `{"response":`+gemFirst+`,"traceId":"t1"}`)},
		[]sseEvent{ev("", `{"response":`+gemLater+`,"traceId":"t1"}`), ev("", `{"response":`+gemStop+`,"traceId":"t1"}`)},
		[]sseEvent{ev("", `{"response":`+gemLater+`,"traceId":"t1"}`)}},
}

func feedAll(t *testing.T, tr *StreamTranslator, evs []sseEvent) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, e := range evs {
		b, err := tr.Feed(e.name, e.data)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
	}
	return out.Bytes()
}

// The first delta reaches the client as soon as it is fed, before the
// upstream has sent anything more: a translated stream is as live as the
// upstream's.
func TestStreamIsIncremental(t *testing.T) {
	for _, tc := range incremental {
		for _, to := range targetsOf(tc.from) {
			t.Run(string(tc.from)+"-to-"+string(to), func(t *testing.T) {
				tr := NewStreamTranslator(tc.from, to, "m")
				head := feedAll(t, tr, tc.head)
				if !bytes.Contains(head, []byte("FIRST")) {
					t.Fatalf("first delta not out after it was fed:\n%s", head)
				}
				if bytes.Contains(head, []byte("LATER")) {
					t.Fatal("impossible: later text before it was fed")
				}
				rest := feedAll(t, tr, tc.tail)
				if !bytes.Contains(rest, []byte("LATER")) {
					t.Fatalf("later delta missing:\n%s", rest)
				}
				if c := tr.Close(); c != nil {
					t.Errorf("Close after a complete stream wrote %q", c)
				}
				all := append(head, rest...)
				validate(t, to, all)
				if to == Anthropic && !strings.Contains(string(all), `"text":"FIRST"}`) {
					t.Errorf("text delta shape:\n%s", all)
				}
			})
		}
	}
}

// A stream that breaks mid-answer must not look complete to the client:
// Close ends it with the client wire's error event.
func TestStreamCutShortEndsWithError(t *testing.T) {
	for _, tc := range incremental {
		for _, to := range targetsOf(tc.from) {
			t.Run(string(tc.from)+"-to-"+string(to), func(t *testing.T) {
				tr := NewStreamTranslator(tc.from, to, "m")
				out := feedAll(t, tr, append(append([]sseEvent{}, tc.head...), tc.partialTail...))
				closing := tr.Close()
				evs := validate(t, to, append(out, closing...))
				last := evs[len(evs)-1]
				switch to {
				case Anthropic:
					if last.name != "error" {
						t.Fatalf("last event %q", last.name)
					}
				case OpenAIResponses:
					if last.name != "response.failed" {
						t.Fatalf("last event %q", last.name)
					}
				case OpenAIChat:
					if !bytes.Contains(last.data, []byte(`"error"`)) {
						t.Fatalf("last chunk %s", last.data)
					}
				case Gemini, GeminiCodeAssist:
					// The validator checked the form each client reads.
					if !bytes.HasPrefix(last.data, []byte(`{"error":{"code":500,`)) {
						t.Fatalf("last event %s", last.data)
					}
				}
				if again := tr.Close(); again != nil {
					t.Errorf("second Close wrote %q", again)
				}
			})
		}
	}
}

func TestStreamUpstreamErrors(t *testing.T) {
	tests := []struct {
		name     string
		from, to Target
		events   []sseEvent
		want     string // in the client's error event
	}{
		// Claude Code retries overloaded_error; it must see that type
		// whatever the other provider called it.
		{"codex overload in stream", OpenAIResponses, Anthropic,
			[]sseEvent{ev("response.created", respCreated),
				ev("response.failed", `{"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","status":"failed","error":{"code":"server_is_overloaded","message":"Our servers are currently overloaded."}}}`)},
			`"type":"overloaded_error","message":"Our servers are currently overloaded."`},
		{"responses error event", OpenAIResponses, Anthropic,
			[]sseEvent{ev("error", `{"type":"error","sequence_number":0,"code":"rate_limit_exceeded","message":"Rate limit reached","param":null}`)},
			`"type":"rate_limit_error","message":"Rate limit reached"`},
		{"chat error chunk", OpenAIChat, Anthropic,
			[]sseEvent{ev("", chatRole), ev("", `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`)},
			`"type":"api_error","message":"The server had an error"`},
		// Codex reads response.failed and retries rate limits.
		{"anthropic rate limit to codex", Anthropic, OpenAIResponses,
			[]sseEvent{ev("error", `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)},
			`"error":{"code":"rate_limit_exceeded","message":"slow down"}`},
		// Google's mid-stream failure, bare or as data.
		{"gemini overload in stream", Gemini, Anthropic,
			[]sseEvent{ev("", gemFirst), ev("", "{\n  \"error\": {\n    \"code\": 503,\n    \"message\": \"The model is overloaded.\",\n    \"status\": \"UNAVAILABLE\"\n  }\n}")},
			`"type":"overloaded_error","message":"The model is overloaded."`},
		{"code assist quota in stream", GeminiCodeAssist, OpenAIChat,
			[]sseEvent{ev("", `{"error":{"code":429,"message":"Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'per day'","status":"RESOURCE_EXHAUSTED"}}`)},
			`"type":"requests","param":null,"code":"rate_limit_exceeded"`},
		// Gemini CLI retries 429 and 503 by their code: to a key's client
		// the error is Google's bare JSON, which its SDK raises with the
		// code; to a login's client, a data line.
		{"anthropic rate limit to gemini cli", Anthropic, Gemini,
			[]sseEvent{ev("message_start", antStart), ev("error", `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)},
			`{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}`},
		{"codex overload to gemini cli login", OpenAIResponses, GeminiCodeAssist,
			[]sseEvent{ev("response.created", respCreated),
				ev("response.failed", `{"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","status":"failed","error":{"code":"server_is_overloaded","message":"Our servers are currently overloaded."}}}`)},
			`data: {"error":{"code":503,"message":"Our servers are currently overloaded.","status":"UNAVAILABLE"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewStreamTranslator(tc.from, tc.to, "m")
			out := append(feedAll(t, tr, tc.events), tr.Close()...)
			validate(t, tc.to, out)
			if !bytes.Contains(out, []byte(tc.want)) {
				t.Errorf("want %s in\n%s", tc.want, out)
			}
			if more, _ := tr.Feed("", []byte(chatLater)); more != nil {
				t.Errorf("events after the error: %s", more)
			}
		})
	}
}

func TestStreamMalformedUpstream(t *testing.T) {
	tr := NewStreamTranslator(OpenAIChat, Anthropic, "m")
	feedAll(t, tr, []sseEvent{ev("", chatRole), ev("", chatFirst)})
	if _, err := tr.Feed("", []byte(`{"choices":[{"delta":`)); err == nil {
		t.Fatal("a broken chunk was accepted")
	}
	if out, err := tr.Feed("", []byte(chatLater)); out != nil || err != nil {
		t.Errorf("Feed after a failure: %q, %v", out, err)
	}
	closing := tr.Close()
	if !bytes.Contains(closing, []byte("event: error")) || !bytes.Contains(closing, []byte("could not be translated")) {
		t.Errorf("Close after a failure: %s", closing)
	}
}

// Chat upstreams differ in how they cut tool calls: the name may come
// after arguments, ids may be missing, and a call that goes back to an
// earlier index cannot be expressed in Anthropic's one-block-at-a-time
// stream.
func TestStreamChatToolCallShapes(t *testing.T) {
	chunk := func(delta string) sseEvent {
		return ev("", `{"id":"chatcmpl-x","choices":[{"index":0,"delta":`+delta+`,"finish_reason":null}]}`)
	}
	finish := ev("", `{"id":"chatcmpl-x","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)

	t.Run("name after arguments, no id", func(t *testing.T) {
		tr := NewStreamTranslator(OpenAIChat, Anthropic, "m")
		out := feedAll(t, tr, []sseEvent{
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}`),
			chunk(`{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"1}"}}]}`),
			finish, ev("", "[DONE]"),
		})
		evs := validate(t, Anthropic, out)
		var args strings.Builder
		for _, e := range evs {
			m := decodeJSON(t, e.data)
			if e.name == "content_block_start" && !anthropicID.MatchString(jstr(m, "content_block", "id")) {
				t.Errorf("generated id %q", jstr(m, "content_block", "id"))
			}
			args.WriteString(jstr(m, "delta", "partial_json"))
		}
		if args.String() != `{"a":1}` {
			t.Errorf("arguments %q", args.String())
		}
	})

	t.Run("interleaved calls", func(t *testing.T) {
		tr := NewStreamTranslator(OpenAIChat, Anthropic, "m")
		feedAll(t, tr, []sseEvent{
			chunk(`{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"f","arguments":"{"}}]}`),
			chunk(`{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"g","arguments":"{}"}}]}`),
		})
		if _, err := tr.Feed("", chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}`).data); err == nil {
			t.Fatal("arguments for a closed block were accepted")
		}
		validate(t, Anthropic, tr.Close())
	})

	t.Run("call that never names its function", func(t *testing.T) {
		tr := NewStreamTranslator(OpenAIChat, Anthropic, "m")
		feedAll(t, tr, []sseEvent{chunk(`{"tool_calls":[{"index":0,"id":"call_a","function":{"arguments":"{}"}}]}`)})
		if _, err := tr.Feed("", finish.data); err == nil {
			t.Fatal("a nameless call was finished")
		}
	})
}

func TestStreamPassThroughSameWire(t *testing.T) {
	tr := NewStreamTranslator(Anthropic, Anthropic, "m")
	out, err := tr.Feed("message_start", []byte(antStart))
	if err != nil || string(out) != "event: message_start\ndata: "+antStart+"\n\n" {
		t.Errorf("%q %v", out, err)
	}
	tr = NewStreamTranslator(OpenAIChat, OpenAIChat, "m")
	if out, _ := tr.Feed("", []byte("[DONE]")); string(out) != "data: [DONE]\n\n" {
		t.Errorf("%q", out)
	}
}

func TestStreamUnsupportedPair(t *testing.T) {
	tr := NewStreamTranslator(OpenAIChat, "openai-assistants", "m")
	if out, err := tr.Feed("", []byte(chatFirst)); err == nil || out != nil {
		t.Errorf("chat to an unknown wire streamed: %q, %v", out, err)
	}
}

func TestStreamReportsTranslationFailure(t *testing.T) {
	var out bytes.Buffer
	src := "data: " + chatFirst + "\n\ndata: {broken\n\n"
	err := Stream(&out, strings.NewReader(src), OpenAIChat, Anthropic, "m")
	if err == nil {
		t.Fatal("a broken upstream chunk went unreported")
	}
	evs := validate(t, Anthropic, out.Bytes())
	if evs[len(evs)-1].name != "error" {
		t.Errorf("client stream not ended with an error:\n%s", out.Bytes())
	}
}
