package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// referenceInspect is inspect as it was before the scanner: json.Unmarshal
// over the whole body. The scanner must answer the same for every valid
// JSON text; parsed reports whether Unmarshal accepted the body.
func referenceInspect(h http.Header, body []byte) (info requestInfo, parsed bool) {
	if len(body) > 0 && bytes.IndexByte(body, '{') >= 0 {
		var f struct {
			Model          string `json:"model"`
			Stream         bool   `json:"stream"`
			PromptCacheKey string `json:"prompt_cache_key"`
			Metadata       struct {
				UserID string `json:"user_id"`
			} `json:"metadata"`
		}
		if json.Unmarshal(body, &f) == nil {
			parsed = true
			info.Model, info.Stream = f.Model, f.Stream
			info.Affinity = sessionFromUserID(f.Metadata.UserID)
			if info.Affinity == "" && f.PromptCacheKey != "" {
				info.Affinity = "pck:" + f.PromptCacheKey
			}
		}
	}
	if s := h.Get("session_id"); s != "" {
		info.Affinity = "sid:" + s
	} else if info.Affinity == "" {
		if s := h.Get("x-session-id"); s != "" {
			info.Affinity = "sid:" + s
		}
	}
	return info, parsed
}

// ccUserID is metadata.user_id as recent Claude Code versions send it: a
// JSON object serialised into a string.
const ccUserID = `{\"device_id\":\"8d2f9a3c41b7e6d05f18a2c9b3e7d4f6a1c8b5e2d9f3a7c4b1e8d5f2a9c6b3e7\",\"account_uuid\":\"3b1c6d2e-7f8a-4b9c-8d0e-1f2a3b4c5d6e\",\"session_id\":\"5f0c3a0e-0d7e-4f7e-9a55-0b8f1e7c2d11\"}`

// claudeCodeBody is a /v1/messages turn as Claude Code sends it, with
// "model" and "stream" at several deeper levels (tool schemas, tool
// inputs, message text) that must not be taken for the top-level ones.
func claudeCodeBody(userID string) string {
	return `{"model":"claude-sonnet-4-5-20250929","messages":[` +
		`{"role":"user","content":[{"type":"text","text":"<system-reminder>\nAs you answer, use this context: {\"model\":\"claude-opus-4-1\",\"stream\":true}\n</system-reminder>"},` +
		`{"type":"text","text":"why does the \"model\" loader stream twice? C:\\\\","cache_control":{"type":"ephemeral"}}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01A","name":"Read","input":{"file_path":"/src/model.go","model":"gpt-4o","stream":false}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A","content":"func load(model string, stream bool) {}\n"}]}],` +
		`"temperature":1,"system":[{"type":"text","text":"You are Claude Code, Anthropic's official CLI for Claude.","cache_control":{"type":"ephemeral"}}],` +
		`"tools":[{"name":"Task","description":"Launch an agent","input_schema":{"type":"object","properties":{"model":{"type":"string","enum":["sonnet","opus"]},"stream":{"type":"boolean"}},"required":["model"],"additionalProperties":false}}],` +
		`"metadata":{"user_id":"` + userID + `"},"max_tokens":32000,"stream":true}`
}

// codexBody is a Responses API request as Codex CLI sends it.
const codexBody = `{"model":"gpt-5-codex","instructions":"You are Codex, based on GPT-5.","input":[` +
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/src</cwd>\n</environment_context>"}]},` +
	`{"type":"function_call","name":"shell","arguments":"{\"command\":[\"rg\",\"\\\"model\\\":\"]}","call_id":"call_1"},` +
	`{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"cfg.json: \\\"stream\\\": false\"}"}],` +
	`"tools":[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}}}}],` +
	`"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"stream":true,` +
	`"include":["reasoning.encrypted_content"],"prompt_cache_key":"0199a213-81c0-7800-8aa1-bbab2a035a53"}`

// chatBody is an OpenAI chat completion.
const chatBody = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Answer in JSON: {\"model\": string}"},{"role":"user","content":"which model are you?"}],"temperature":0.2,"stream":false,"stream_options":null,"response_format":{"type":"json_object"}}`

type inspectCase struct {
	name   string
	header map[string]string
	body   string
	want   requestInfo
}

func inspectCases() []inspectCase {
	return slices.Concat(clientCases(), layoutCases(), malformedCases())
}

// clientCases are the bodies and headers clients send.
func clientCases() []inspectCase {
	const sess = "5f0c3a0e-0d7e-4f7e-9a55-0b8f1e7c2d11"
	const flat = "user_9a3c41b7e6d05f18_account_3b1c6d2e-7f8a-4b9c-8d0e-1f2a3b4c5d6e_session_" + sess
	return []inspectCase{
		// What clients send.
		{name: "claude code, user_id holds JSON with session_id", body: claudeCodeBody(ccUserID),
			want: requestInfo{Model: "claude-sonnet-4-5-20250929", Stream: true, Affinity: "cc:" + sess}},
		{name: "claude code, old flat user_id", body: claudeCodeBody(flat),
			want: requestInfo{Model: "claude-sonnet-4-5-20250929", Stream: true, Affinity: "cc:" + flat}},
		{name: "claude code, user_id JSON without session_id",
			body: `{"model":"claude-haiku-4-5","metadata":{"user_id":"{\"device_id\":\"d1\"}"}}`,
			want: requestInfo{Model: "claude-haiku-4-5", Affinity: `cc:{"device_id":"d1"}`}},
		{name: "claude code, user_id that is not JSON after all",
			body: `{"model":"claude-haiku-4-5","metadata":{"user_id":"{not json"}}`,
			want: requestInfo{Model: "claude-haiku-4-5", Affinity: "cc:{not json"}},
		{name: "claude code, session_id header wins over user_id", header: map[string]string{"session_id": "hdr"},
			body: claudeCodeBody(ccUserID),
			want: requestInfo{Model: "claude-sonnet-4-5-20250929", Stream: true, Affinity: "sid:hdr"}},
		{name: "codex with session_id header", header: map[string]string{"session_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
			body: codexBody,
			want: requestInfo{Model: "gpt-5-codex", Stream: true, Affinity: "sid:0199a213-81c0-7800-8aa1-bbab2a035a53"}},
		{name: "codex without header falls back to prompt_cache_key", body: codexBody,
			want: requestInfo{Model: "gpt-5-codex", Stream: true, Affinity: "pck:0199a213-81c0-7800-8aa1-bbab2a035a53"}},
		{name: "codex, x-session-id does not beat prompt_cache_key", header: map[string]string{"x-session-id": "x"},
			body: codexBody,
			want: requestInfo{Model: "gpt-5-codex", Stream: true, Affinity: "pck:0199a213-81c0-7800-8aa1-bbab2a035a53"}},
		{name: "user_id beats prompt_cache_key",
			body: `{"prompt_cache_key":"p","metadata":{"user_id":"u"},"model":"m"}`,
			want: requestInfo{Model: "m", Affinity: "cc:u"}},
		{name: "openai chat", body: chatBody, want: requestInfo{Model: "gpt-4o-mini"}},
		{name: "openai chat with x-session-id", header: map[string]string{"x-session-id": "conv-7"}, body: chatBody,
			want: requestInfo{Model: "gpt-4o-mini", Affinity: "sid:conv-7"}},
		{name: "no body, session_id header", header: map[string]string{"session_id": "s"},
			want: requestInfo{Affinity: "sid:s"}},
	}
}

// layoutCases are valid JSON laid out, escaped, keyed and nested in the
// ways a scan can trip on.
func layoutCases() []inspectCase {
	return []inspectCase{
		// Order and layout.
		{name: "metadata and stream before model, long value between",
			body: `{"metadata":{"user_id":"u"},"stream":true,"messages":[` + strings.Repeat(`{"role":"user","content":"x"},`, 50) + `{}],"model":"last"}`,
			want: requestInfo{Model: "last", Stream: true, Affinity: "cc:u"}},
		{name: "whitespace everywhere",
			body: " \r\n\t{ \"stream\" :\ttrue ,\n \"metadata\" : { \"user_id\" : \"u\" } , \"model\"\r\n:\n\"m\" }\n ",
			want: requestInfo{Model: "m", Stream: true, Affinity: "cc:u"}},
		{name: "empty object", body: `{}`},
		{name: "empty metadata", body: `{"metadata":{},"model":"m"}`, want: requestInfo{Model: "m"}},

		// Escapes in values.
		{name: "escaped model", body: `{"model":"claude\u002dsonnet\/4\t\"x\"\\"}`,
			want: requestInfo{Model: "claude-sonnet/4\t\"x\"\\"}},
		{name: "surrogate pair", body: `{"model":"m","prompt_cache_key":"k\ud83d\ude00"}`,
			want: requestInfo{Model: "m", Affinity: "pck:k\U0001F600"}},
		{name: "lone surrogate becomes U+FFFD", body: `{"model":"a\ud800b"}`, want: requestInfo{Model: "a\uFFFDb"}},
		{name: "raw UTF-8 in model", body: `{"model":"modèle-日本"}`, want: requestInfo{Model: "modèle-日本"}},
		{name: "invalid UTF-8 becomes U+FFFD", body: "{\"model\":\"a\xffb\"}", want: requestInfo{Model: "a\uFFFDb"}},
		{name: "string ending in backslashes before a wanted key",
			body: `{"path":"C:\\\\","x":"\\\"","model":"m"}`, want: requestInfo{Model: "m"}},
		{name: "escaped quotes hide a key-like text", body: `{"text":"\",\"model\":\"evil","model":"m"}`,
			want: requestInfo{Model: "m"}},

		// Keys as encoding/json matches them.
		{name: "keys in other cases", body: `{"MODEL":"m","Stream":true,"Metadata":{"User_ID":"u"}}`,
			want: requestInfo{Model: "m", Stream: true, Affinity: "cc:u"}},
		{name: "escaped key", body: `{"\u006dodel":"m","str\u0065am":true}`, want: requestInfo{Model: "m", Stream: true}},
		{name: "long s folds to s", body: `{"ſtream":true,"model":"m"}`, want: requestInfo{Model: "m", Stream: true}},
		{name: "kelvin sign folds to k", body: `{"prompt_cache_\u212aey":"p"}`, want: requestInfo{Affinity: "pck:p"}},
		{name: "near misses are other keys", body: `{"models":"x","model ":"y","mode":"z","stream_options":{"include_usage":true},"user_id":"top"}`},

		// Nested lookalikes.
		{name: "model and stream inside metadata are not top-level",
			body: `{"metadata":{"model":"x","user_id":"u","model":"y","stream":true,"user":{"user_id":"deep"}}}`,
			want: requestInfo{Affinity: "cc:u"}},
		{name: "model in arrays and objects",
			body: `{"a":[{"model":"x"},["model","stream"]],"b":{"c":{"model":"y","stream":true}},"model":"m"}`,
			want: requestInfo{Model: "m"}},

		// Duplicates: the last wins, null changes nothing.
		{name: "duplicate model", body: `{"model":"a","model":"b"}`, want: requestInfo{Model: "b"}},
		{name: "duplicate model, different case", body: `{"model":"a","Model":"b"}`, want: requestInfo{Model: "b"}},
		{name: "stream true then false", body: `{"stream":true,"stream":false}`},
		{name: "null keeps the earlier value", body: `{"model":"a","model":null,"stream":true,"stream":null,"metadata":{"user_id":"u"},"metadata":null}`,
			want: requestInfo{Model: "a", Stream: true, Affinity: "cc:u"}},
		{name: "second metadata overrides user_id", body: `{"metadata":{"user_id":"a"},"metadata":{"user_id":"b"}}`,
			want: requestInfo{Affinity: "cc:b"}},
		{name: "second metadata without user_id keeps the first", body: `{"metadata":{"user_id":"a"},"metadata":{"other":1}}`,
			want: requestInfo{Affinity: "cc:a"}},
		{name: "empty user_id falls back to prompt_cache_key", body: `{"metadata":{"user_id":""},"prompt_cache_key":"p"}`,
			want: requestInfo{Affinity: "pck:p"}},
	}
}

// malformedCases are bodies encoding/json refuses.
func malformedCases() []inspectCase {
	return []inspectCase{
		// A wanted field of the wrong type: Unmarshal fails, the body counts
		// for nothing, headers still do.
		{name: "model is a number", header: map[string]string{"x-session-id": "x"},
			body: `{"stream":true,"model":4,"metadata":{"user_id":"u"}}`, want: requestInfo{Affinity: "sid:x"}},
		{name: "stream is a string", body: `{"model":"m","stream":"true"}`},
		{name: "metadata is a string", body: `{"model":"m","metadata":"u"}`},
		{name: "metadata is an array", body: `{"model":"m","metadata":[{"user_id":"u"}]}`},
		{name: "user_id is an object", body: `{"model":"m","metadata":{"user_id":{"session_id":"s"}}}`},
		{name: "prompt_cache_key is true", body: `{"model":"m","prompt_cache_key":true}`},
		{name: "wrong type after a good duplicate", body: `{"model":"m","model":[]}`},

		// Not an object.
		{name: "empty body"},
		{name: "whitespace body", body: " \n"},
		{name: "array", body: `[{"model":"m","stream":true}]`},
		{name: "string", body: `"{\"model\":\"m\"}"`},
		{name: "number", body: `42`},
		{name: "null", body: `null`},
		{name: "true", body: `true`},

		// Not JSON: what was read before the scan lost its footing is kept.
		{name: "truncated after stream", body: `{"model":"m","stream":true`, want: requestInfo{Model: "m", Stream: true}},
		{name: "truncated inside a literal", body: `{"model":"m","stream":tru`, want: requestInfo{Model: "m"}},
		{name: "truncated inside a wanted string", body: `{"model":"m","prompt_cache_key":"p`, want: requestInfo{Model: "m"}},
		{name: "truncated inside messages", body: `{"model":"m","messages":[{"role":"user","content":"hi`, want: requestInfo{Model: "m"}},
		{name: "truncated after user_id", body: `{"model":"m","metadata":{"user_id":"u"`, want: requestInfo{Model: "m", Affinity: "cc:u"}},
		{name: "missing comma", body: `{"model":"m" "stream":true}`, want: requestInfo{Model: "m"}},
		{name: "missing colon", body: `{"model" "m","stream":true}`},
		{name: "bad escape in a wanted value", body: `{"stream":true,"model":"\x"}`, want: requestInfo{Stream: true}},
		{name: "control character in a wanted value", body: "{\"stream\":true,\"model\":\"a\nb\"}", want: requestInfo{Stream: true}},
		{name: "garbage after the object", body: `{"model":"m","stream":true} {"model":"n"}`, want: requestInfo{Model: "m", Stream: true}},
		{name: "bare word as a value", body: `{"model":"m","x":yes,"stream":true}`, want: requestInfo{Model: "m"}},
		{name: "trailing comma", body: `{"model":"m",}`, want: requestInfo{Model: "m"}},
		{name: "only a brace", body: `{`},
		{name: "unbalanced closers in a skipped value", body: `{"x":[]],"model":"m"}`},
		// Deeper than encoding/json's limit of 10000, so not JSON to it;
		// the skip counts brackets instead of recursing.
		{name: "very deep nesting is skipped", body: `{"messages":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `,"model":"m"}`,
			want: requestInfo{Model: "m"}},
	}
}

func TestInspect(t *testing.T) {
	for _, c := range inspectCases() {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.header {
				h.Set(k, v)
			}
			body := []byte(c.body)
			if c.body == "" {
				body = nil
			}
			if got := fields(inspect(h, body)); got != c.want {
				t.Errorf("inspect = %+v, want %+v", got, c.want)
			}
			// The expectations for valid JSON are encoding/json's, not
			// just this table's.
			if json.Valid(body) {
				if ref, _ := referenceInspect(h, body); ref != c.want {
					t.Errorf("reference = %+v, want %+v", ref, c.want)
				}
			}
		})
	}
}

// TestInspectTruncated cuts a Claude Code body at every byte: each field
// appears exactly once its value is complete, and never a wrong value.
func TestInspectTruncated(t *testing.T) {
	body := []byte(claudeCodeBody(ccUserID))
	full, _ := referenceInspect(http.Header{}, body)
	if full.Model == "" || !full.Stream || full.Affinity == "" {
		t.Fatalf("reference found %+v: the body no longer exercises every field", full)
	}
	end := func(after string) int {
		i := bytes.Index(body, []byte(after))
		if i < 0 || bytes.Index(body[i+1:], []byte(after)) >= 0 {
			t.Fatalf("%q is not in the body exactly once", after)
		}
		return i + len(after)
	}
	modelEnd := end(`"model":"` + full.Model + `"`)
	userEnd := end(`"user_id":"` + ccUserID + `"`)
	streamEnd := end(`"stream":true}`) - 1
	for n := range len(body) + 1 {
		var want requestInfo
		if n >= modelEnd {
			want.Model = full.Model
		}
		if n >= userEnd {
			want.Affinity = full.Affinity
		}
		if n >= streamEnd {
			want.Stream = true
		}
		if got := fields(inspect(http.Header{}, body[:n])); got != want {
			t.Fatalf("body cut at %d of %d (…%s): got %+v, want %+v", n, len(body), body[max(0, n-20):n], got, want)
		}
	}
}

// TestInspectBenchmarkBody checks that the body the benchmark measures
// yields what the reference does, so the numbers are for a scan that
// does its job.
func TestInspectBenchmarkBody(t *testing.T) {
	for _, size := range []int{0, 256 << 10} {
		body := microMessagesBody(size)
		want, parsed := referenceInspect(microClaudeCodeHeader(), body)
		if !parsed || want.Model == "" || want.Affinity == "" {
			t.Fatalf("size %d: reference parsed=%v %+v", size, parsed, want)
		}
		if got := fields(inspect(microClaudeCodeHeader(), body)); got != want {
			t.Errorf("size %d: got %+v, want %+v", size, got, want)
		}
	}
}

// FuzzInspect compares inspect with the encoding/json reference on every
// valid JSON input, including those where Unmarshal fails on a field's
// type; on anything else inspect must only return. A valid input is also
// tried in each place the scanner treats differently (as a wanted field's
// value, as metadata, as a skipped value, as a key when it is a string),
// so that whatever value the fuzzer finds is checked on every path.
func FuzzInspect(f *testing.F) {
	for _, c := range inspectCases() {
		f.Add([]byte(c.body))
	}
	f.Add(microMessagesBody(2 << 10))
	for _, k := range []string{`"model"`, `"STREAM"`, `"metadata"`, `"user_id"`, `"prompt_cache_key"`, `"\u006dodel"`, `"ſtream"`, `"user_\u0130d"`} {
		f.Add([]byte(k))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		inspect(http.Header{}, body)
		if !json.Valid(body) {
			return
		}
		v := string(body)
		docs := []string{
			v,
			`{"model":` + v + `}`,
			`{"stream":` + v + `}`,
			`{"prompt_cache_key":` + v + `}`,
			`{"metadata":` + v + `}`,
			`{"metadata":{"user_id":` + v + `,"user_id":` + v + `}}`,
			`{"model":"m","messages":` + v + `,"stream":true}`,
			`{"metadata":{"x":` + v + `,"user_id":"u"}}`,
		}
		if trimmed := strings.TrimSpace(v); strings.HasPrefix(trimmed, `"`) {
			docs = append(docs,
				`{`+v+`:"s"}`,
				`{`+v+`:true}`,
				`{"metadata":{`+v+`:"u"}}`)
		}
		for _, d := range docs {
			doc := []byte(d)
			want, _ := referenceInspect(http.Header{}, doc)
			if got := fields(inspect(http.Header{}, doc)); got != want {
				t.Fatalf("inspect(%q) = %+v, reference %+v", doc, got, want)
			}
			// Nothing after the top-level value is read.
			if bytes.HasPrefix(bytes.TrimLeft(doc, " \t\r\n"), []byte("{")) {
				tail := append(doc, `,"model":"tail"}`...)
				if got := fields(inspect(http.Header{}, tail)); got != want {
					t.Fatalf("inspect(%q) = %+v, want %+v as without the tail", tail, got, want)
				}
			}
		}
	})
}

// readBody reads a body of known length into one buffer of that size, a
// chunked one bounded by the limit, and refuses either past the limit.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("x", 3000)
	for _, tc := range []struct {
		name   string
		length int64 // -1: chunked
		send   string
		limit  int64
		want   string
		err    error
	}{
		{"known length", 3000, body, 4096, body, nil},
		{"known length, empty", 0, "", 4096, "", nil},
		{"chunked", -1, body, 4096, body, nil},
		{"known length over the limit", 3000, body, 1024, "", errTooLarge},
		{"chunked over the limit", -1, body, 1024, "", errTooLarge},
		{"client stops short of its length", 4000, body, 8192, "", io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(tc.send))
			r.ContentLength = tc.length
			got, err := readBody(httptest.NewRecorder(), r, tc.limit, time.Time{})
			if !errors.Is(err, tc.err) || string(got) != tc.want {
				t.Fatalf("got %d bytes, %v; want %d bytes, %v", len(got), err, len(tc.want), tc.err)
			}
			if tc.err == nil && tc.length >= 0 && cap(got) != len(got) {
				t.Errorf("capacity %d for a body of %d bytes", cap(got), len(got))
			}
		})
	}
}

// fields is info without its flaw: what the encoding/json reference
// reads is compared with what inspect reads, and the flaw (checked against
// its own reference by jsonscan's FuzzScan) apart.
func fields(info requestInfo) requestInfo {
	info.Flaw = ""
	return info
}
