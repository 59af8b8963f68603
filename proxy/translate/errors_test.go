package translate

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

var errorBodyTests = []struct {
	name     string
	from, to Target
	status   int
	body     string
	want     string // the translated body, exactly
}{
	// Anthropic's 529, quoted in shared/reference/protocols.md; Codex
	// retries server_is_overloaded.
	{"overloaded to responses", Anthropic, OpenAIResponses, 529,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011"}`,
		`{"error":{"message":"Overloaded","type":"server_error","param":null,"code":"server_is_overloaded"}}`},
	{"rate limit to chat", Anthropic, OpenAIChat, 429,
		`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."}}`,
		`{"error":{"message":"This request would exceed your account's rate limit. Please try again later.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
	{"billing to chat", Anthropic, OpenAIChat, 402,
		`{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low."}}`,
		`{"error":{"message":"Your credit balance is too low.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`},
	// The Codex plan quota (protocols.md): Claude Code must see a
	// rate limit, with the message.
	{"codex usage limit", OpenAIResponses, Anthropic, 429,
		`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"pro","resets_at":1772370000}}`,
		`{"type":"error","error":{"type":"rate_limit_error","message":"The usage limit has been reached"}}`},
	{"bad key", OpenAIChat, Anthropic, 401,
		`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
		`{"type":"error","error":{"type":"authentication_error","message":"Incorrect API key provided."}}`},
	{"context too long", OpenAIChat, Anthropic, 400,
		`{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		`{"type":"error","error":{"type":"invalid_request_error","message":"This model's maximum context length is 128000 tokens."}}`},
	{"quota", OpenAIChat, Anthropic, 429,
		`{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		`{"type":"error","error":{"type":"billing_error","message":"You exceeded your current quota."}}`},
	// A gateway's HTML page: the status decides, the text is kept.
	{"html 503", OpenAIChat, Anthropic, 503,
		`<html><body>Service Unavailable</body></html>`,
		`{"type":"error","error":{"type":"overloaded_error","message":"<html><body>Service Unavailable</body></html>"}}`},
	{"empty 504", Anthropic, OpenAIChat, 504, ``,
		`{"error":{"message":"Gateway Timeout","type":"server_error","param":null,"code":null}}`},
	{"same wire untouched", Anthropic, Anthropic, 500, `{"anything":1}`, `{"anything":1}`},

	// Google's errors (the shapes issue 26 lists): Claude Code and
	// Codex must see the type they retry or wait on.
	{"gemini quota to claude code", Gemini, Anthropic, 429,
		`{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`,
		`{"type":"error","error":{"type":"rate_limit_error","message":"You exceeded your current quota, please check your plan and billing details."}}`},
	{"gemini overloaded to codex", GeminiCodeAssist, OpenAIResponses, 503,
		`{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`,
		`{"error":{"message":"The model is overloaded. Please try again later.","type":"server_error","param":null,"code":"server_is_overloaded"}}`},
	{"gemini bad key to chat", Gemini, OpenAIChat, 400,
		`{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`,
		`{"error":{"message":"API key not valid. Please pass a valid API key.","type":"invalid_request_error","param":null,"code":null}}`},
	{"code assist login expired", GeminiCodeAssist, Anthropic, 401,
		`{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`,
		`{"type":"error","error":{"type":"authentication_error","message":"Request had invalid authentication credentials."}}`},
	{"gemini internal, listed", Gemini, Anthropic, 500,
		`[{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}]`,
		`{"type":"error","error":{"type":"api_error","message":"An internal error has occurred."}}`},
	// Gemini CLI reads the code and status; Anthropic's 529 is
	// Google's 503.
	{"anthropic overloaded to gemini cli", Anthropic, Gemini, 529,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE"}}`},
	{"codex usage limit to gemini cli", ChatGPTCodex, GeminiCodeAssist, 429,
		`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":1772370000}}`,
		`{"error":{"code":429,"message":"The usage limit has been reached","status":"RESOURCE_EXHAUSTED"}}`},
	{"anthropic bad request to gemini cli", Anthropic, Gemini, 400,
		`{"type":"error","error":{"type":"invalid_request_error","message":"messages.1: tool_use ids must be unique"}}`,
		`{"error":{"code":400,"message":"messages.1: tool_use ids must be unique","status":"INVALID_ARGUMENT"}}`},
	{"html 502 to gemini cli", OpenAIChat, Gemini, 502, `<html>Bad Gateway</html>`,
		`{"error":{"code":500,"message":"<html>Bad Gateway</html>","status":"INTERNAL"}}`},
	{"gemini to code assist untouched", Gemini, GeminiCodeAssist, 429, `{"error":{"code":429}}`, `{"error":{"code":429}}`},
}

func TestErrorBody(t *testing.T) {
	tests := errorBodyTests
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ErrorBody(tc.from, tc.to, tc.status, []byte(tc.body))
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestErrorBodyBoundsForeignText(t *testing.T) {
	body := strings.Repeat("é", 400) // 800 bytes of two-byte runes
	got := ErrorBody(OpenAIChat, Anthropic, 502, []byte(body))
	var e aError
	if err := json.Unmarshal(got, &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Error.Message) > 510 || !strings.HasSuffix(e.Error.Message, "…") || e.Error.Type != "api_error" {
		t.Errorf("%d bytes, type %q: %q", len(e.Error.Message), e.Error.Type, e.Error.Message)
	}
}

// Whatever an upstream sends, translation returns an error or a result;
// it never panics, and a stream always ends in a terminal event of the
// client's wire.
func FuzzStream(f *testing.F) {
	for _, s := range []string{
		"data: " + chatRole + "\n\ndata: " + chatFirst + "\n\ndata: [DONE]\n\n",
		"event: response.created\ndata: " + respCreated + "\n\nevent: response.output_text.delta\ndata: " + respFirst + "\n\n",
		"event: message_start\ndata: " + antStart + "\n\nevent: content_block_delta\ndata: " + antFirst + "\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}}]}\n\n",
		"data: " + gemFirst + "\r\n\r\ndata: " + gemStop + "\r\n\r\n",
		"data: {\"response\":" + gemFirst + "}\n\n{\n  \"error\": {\"code\": 503}\n}\n",
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{\"a\":1}}},{\"text\":\"x\"}]},\"finishReason\":\"MALFORMED_FUNCTION_CALL\"}]}\n\n",
	} {
		for from := range len(fuzzWires) {
			f.Add(uint8(from), []byte(s))
		}
	}
	for _, file := range []string{"gemini_tools", "code_assist_tools", "anthropic_tool_use"} {
		b, err := os.ReadFile("testdata/streams/" + file + ".sse")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(slices.Index(fuzzWires, wireOf(file))), b)
	}
	f.Fuzz(func(t *testing.T, w uint8, src []byte) {
		from := fuzzWires[int(w)%len(fuzzWires)]
		for _, to := range targetsOf(from) {
			var out bytes.Buffer
			_ = Stream(&out, bytes.NewReader(src), from, to, "m")
			if out.Len() > 0 {
				validate(t, to, out.Bytes())
			}
		}
	})
}

// fuzzWires are the upstream and client wires the fuzz tests pick from
// by their first byte.
var fuzzWires = []Target{Anthropic, OpenAIChat, OpenAIResponses, Gemini, GeminiCodeAssist}

func FuzzRequest(f *testing.F) {
	for file, wire := range map[string]uint8{"claude_code": 0, "opencode": 1, "codex": 2, "easy_input": 2, "gemini_cli": 3, "code_assist_cli": 4} {
		b, err := os.ReadFile("testdata/requests/" + file + ".json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(wire, b)
	}
	f.Fuzz(func(t *testing.T, w uint8, body []byte) {
		from := fuzzWires[int(w)%len(fuzzWires)]
		for _, to := range append(targetsOf(from), from) {
			// A Gemini model exercises the thinking and image paths.
			for _, model := range []string{"m", "gemini-3-pro-preview"} {
				out, _, err := RequestWithOptions(from, to, body, model, RequestOptions{Stream: w&0x80 != 0})
				if err == nil && !json.Valid(out) {
					t.Fatalf("invalid JSON out: %s", out)
				}
			}
		}
	})
}

// subpool's own errors take their types from the table that types an
// upstream's bare error, as Anthropic's API errors page lists statuses: a
// 503 is an api_error (Claude Code retries overloaded_error whatever
// x-should-retry says, and subpool's final 503 must stay final), a 529
// the overload. Google's body keeps the HTTP status as its code.
func TestStatusBody(t *testing.T) {
	tests := []struct {
		to     Target
		status int
		want   string
	}{
		{Anthropic, 503, `{"type":"error","error":{"type":"api_error","message":"m"}}`},
		{Anthropic, 529, `{"type":"error","error":{"type":"overloaded_error","message":"m"}}`},
		{Anthropic, 504, `{"type":"error","error":{"type":"timeout_error","message":"m"}}`},
		{Anthropic, 403, `{"type":"error","error":{"type":"permission_error","message":"m"}}`},
		{OpenAIChat, 401, `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		{OpenAIChat, 503, `{"error":{"message":"m","type":"server_error","param":null,"code":null}}`},
		{Gemini, 405, `{"error":{"code":405,"message":"m","status":"UNIMPLEMENTED"}}`},
		{Gemini, 503, `{"error":{"code":503,"message":"m","status":"UNAVAILABLE"}}`},
	}
	for _, tc := range tests {
		if got := string(StatusBody(tc.to, tc.status, "m")); got != tc.want {
			t.Errorf("%s %d: %s, want %s", tc.to, tc.status, got, tc.want)
		}
	}
	// An upstream's bare 503 is its provider's overload, on the two
	// wires that document it so.
	for _, from := range []Target{OpenAIChat, Gemini} {
		if got := string(ErrorBody(from, Anthropic, 503, []byte("busy"))); !strings.Contains(got, `"overloaded_error"`) {
			t.Errorf("%s 503: %s", from, got)
		}
	}
}
