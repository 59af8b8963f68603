package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
)

// streamWire is one of the three streaming APIs, with a refusal sample of
// each class as that API puts it inside a 200 stream.
type streamWire struct {
	name, path, body string
	// event builds the error event's data for a class, its message
	// padded to about pad bytes.
	event func(class classify.Class, pad int) string
	// end is what only a complete answer of this wire contains; opening
	// is how its stream begins.
	end, opening string
}

func pad(msg string, n int) string {
	if n > len(msg) {
		msg += " " + strings.Repeat("x", n-len(msg))
	}
	return msg
}

var streamWires = []streamWire{
	{
		name: "messages", path: "/v1/messages", end: "message_stop", opening: "event: message_start\n",
		body: `{"model":"claude-sonnet-4-5","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		event: func(c classify.Class, n int) string {
			sample := map[classify.Class][2]string{
				classify.ClientError: {"invalid_request_error", "prompt is too long: 212345 tokens > 200000 maximum"},
				classify.RateLimit:   {"rate_limit_error", "This request would exceed your account's rate limit. Please try again later."},
				classify.Capacity:    {"overloaded_error", "Overloaded"},
				classify.Transient:   {"api_error", "Internal server error"},
				classify.AuthExpired: {"authentication_error", "OAuth token has expired. Please obtain a new token or refresh your existing token."},
				classify.AuthInvalid: {"authentication_error", "invalid x-api-key"},
			}[c]
			typ, msg := sample[0], sample[1]
			b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": pad(msg, n)}})
			return string(b)
		},
	},
	{
		name: "responses", path: "/v1/responses", end: "response.completed", opening: "event: response.created\n",
		body: `{"model":"gpt-5","input":"hi","stream":true}`,
		event: func(c classify.Class, n int) string {
			code, msg := openaiSample(c)
			// A response.failed echoes the whole response object: long
			// instructions make it large whatever the message.
			b, _ := json.Marshal(map[string]any{"type": "response.failed", "sequence_number": 3, "response": map[string]any{
				"id": "resp_1", "object": "response", "status": "failed", "instructions": strings.Repeat("i", n),
				"error": map[string]string{"code": code, "message": msg}, "output": []any{},
			}})
			return string(b)
		},
	},
	{
		name: "chat", path: "/v1/chat/completions", end: "[DONE]", opening: `data: {"choices":[{"delta":{"content":"","refusal":null,"role":"assistant"}`,
		body: `{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		event: func(c classify.Class, n int) string {
			code, msg := openaiSample(c)
			typ := map[string]string{"rate_limit_exceeded": "tokens", "server_is_overloaded": "server_error", "server_error": "server_error"}[code]
			if typ == "" {
				typ = "invalid_request_error"
			}
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": pad(msg, n), "type": typ, "code": code, "param": nil}})
			return string(b)
		},
	},
}

func openaiSample(c classify.Class) (code, msg string) {
	switch c {
	case classify.ClientError:
		return "context_length_exceeded", "Your input exceeds the context window of this model. Please adjust your input and try again."
	case classify.RateLimit:
		return "rate_limit_exceeded", "Rate limit reached for gpt-5 on tokens per min (TPM): Limit 30000, Used 30000, Requested 100. Please try again in 2s."
	case classify.Capacity:
		return "server_is_overloaded", "Our servers are currently overloaded. Please try again later."
	case classify.Transient:
		return "server_error", "The server had an error processing your request."
	case classify.AuthExpired:
		return "token_expired", "Provided authentication token is expired. Please try signing in again."
	}
	return "invalid_api_key", "Incorrect API key provided."
}

// TestStreamErrorMatrix: an error inside a 200 stream, on each wire, of
// each class, at each position, small and large. Before any byte of the
// body reached the client it is acted on like the same refusal as an HTTP
// status: a rate limit or a dead key rotates, an overload or a blip is
// tried again in place, and a client error reaches the client, never as
// an empty 200. As the first event it comes as the HTTP error it stands
// for, in the provider's shape; after the opening events the client
// already has the stream's headers, so it gets the stream as the upstream
// sent it. After content reached the client the stream passes through
// unchanged, ending with the upstream's own error event, and nothing is
// tried again.
func TestStreamErrorMatrix(t *testing.T) {
	classes := []classify.Class{classify.ClientError, classify.RateLimit, classify.Capacity, classify.Transient, classify.AuthExpired, classify.AuthInvalid}
	positions := []struct {
		name  string
		after int // sim.Step.ErrorAfter
	}{{"first event", 0}, {"after the opening events", -1}, {"after content", 1}}
	sizes := []struct {
		name string
		n    int
	}{{"small", 0}, {"8KiB", 8 << 10}}

	for _, w := range streamWires {
		provider := "anthropic"
		if w.name != "messages" {
			provider = "openai"
		}
		for _, c := range classes {
			for _, pos := range positions {
				for _, size := range sizes {
					t.Run(fmt.Sprintf("%s/%s/%s/%s", w.name, c, pos.name, size.name), func(t *testing.T) {
						streamErrorCase(t, w, provider, c, pos.after, size.n)
					})
				}
			}
		}
	}
}

func evName(w streamWire, data string) string {
	switch w.name {
	case "messages":
		return "error"
	case "responses":
		return "response.failed"
	}
	return ""
}

// A client error in a 200 stream whose budget of retries does not apply:
// what the client of each wire receives, in full.
func TestStreamClientErrorBody(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	data := `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 212345 tokens > 200000 maximum"}}`
	e.up.Script("key-a", sim.Step{StreamError: data})
	resp, body := e.post("/v1/messages", streamWires[0].body)
	if resp.StatusCode != 400 || body != data {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}

	e = newEnv(t, false)
	e.key("openai", "key-o")
	e.up.Script("key-o", sim.Step{StreamError: streamWires[1].event(classify.ClientError, 0)})
	resp, body = e.post("/v1/responses", streamWires[1].body)
	want := `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`
	if resp.StatusCode != 400 || body != want {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// Once capacity_max is spent, an overload inside a stream reaches the
// client as the 529 it stands for, not as an empty 200.
func TestStreamCapacitySpentRelays(t *testing.T) {
	e := newEnv(t, false, func(o *Options, _ *sim.Options) { o.CapacityMax = 0 })
	e.key("anthropic", "key-a")
	e.up.Script("key-a", sim.StreamOverloaded("anthropic"))
	resp, body := e.post("/v1/messages", streamWires[0].body)
	if resp.StatusCode != 529 || !strings.Contains(body, "overloaded_error") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

// Once a stream's opening events have come, the client has its headers
// (200, text/event-stream) and none of its body. A refusal after that
// which subpool cannot get past still reaches the client, in the stream,
// in the wire's own error shape: never an empty 200, never a JSON body
// inside an event stream, and no second provider takes over an answer
// begun on the first.
func TestStreamOpenedRefusals(t *testing.T) {
	for _, tc := range openedRefusals(withLadder(t, "")) {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false, tc.opts...)
			provider := "anthropic"
			if tc.wire.name != "messages" {
				provider = "openai"
			}
			e.key(provider, "key-a")
			if provider == "anthropic" {
				e.key("openai", "key-o")
			}
			e.up.Script("key-a", tc.steps...)
			r := e.pump(e.async(context.Background(), tc.wire.path, tc.wire.body))
			if r.resp == nil {
				t.Fatalf("no answer: %s", r.body)
			}
			if r.resp.StatusCode != 200 || !strings.HasPrefix(r.resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d (%s): %q", r.resp.StatusCode, r.resp.Header.Get("Content-Type"), r.body)
			}
			if calls := strings.Join(e.credsSeen(), ","); calls != tc.calls {
				t.Fatalf("calls %s, want %s", calls, tc.calls)
			}
			if r.resp.Header.Get("x-subpool-fallback") != "" || len(e.rec.of(api.EventFallback)) != 0 {
				t.Fatalf("fell back after the stream began")
			}
			tc.check(t, r.body)
			if fin := e.rec.of(api.EventRequestFinished); len(fin) != 1 || fin[0].Status == 200 || fin[0].Class == "ok" {
				t.Fatalf("request_finished %+v", fin)
			}
		})
	}
}

// A fallback target's stream that opens and is then refused: the client
// (on another wire) has the translated headers, and gets the refusal as
// the one error event of its own wire.
func TestStreamOpenedRefusalOnFallback(t *testing.T) {
	e := newEnv(t, false, withLadder(t, ""), func(o *Options, _ *sim.Options) { o.SoleProviderMax = 0 })
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.coolAll("anthropic", time.Hour)
	e.up.Script("key-o", sim.Step{StreamError: streamWires[1].event(classify.RateLimit, 0), ErrorAfter: -1})
	r := e.pump(e.async(context.Background(), "/v1/messages", streamWires[0].body))
	if r.resp == nil || r.resp.StatusCode != 200 || !strings.HasPrefix(r.resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%v: %q", r.resp, r.body)
	}
	if calls := strings.Join(e.credsSeen(), ","); calls != "key-o" {
		t.Fatalf("calls %s", calls)
	}
	ev := readSSE(t, r.body)
	last := ev[len(ev)-1]
	if len(ev) != 1 || last.name != "error" || str(last.data, "type") != "error" || str(last.data, "error", "message") == "" {
		t.Fatalf("%q", r.body)
	}
}

// streamErrorCase runs one cell of TestStreamErrorMatrix: the upstream's
// stream on wire w carries an error event of class c, after events in
// (sim.Step.ErrorAfter), n bytes long.
func streamErrorCase(t *testing.T, w streamWire, provider string, c classify.Class, after, n int) {
	data := w.event(c, n)
	if v, isErr := classify.ClassifyEvent(classify.Lookup(provider), evName(w, data), []byte(data), epoch); !isErr || v.Class != c {
		t.Fatalf("sample classifies as %s (error %v), want %s", v.Class, isErr, c)
	}
	e := newEnv(t, false)
	e.key(provider, "key-a", "key-b")
	e.up.Script("key-a", sim.Step{StreamError: data, ErrorAfter: after})
	r := e.pump(e.async(context.Background(), w.path, w.body))
	if r.resp == nil {
		t.Fatalf("no answer: %s", r.body)
	}
	checkStreamError(t, e, r, w, c, data, after)
}

// checkStreamError checks what the client got for the stream error data
// of class c sent after events in, on wire w.
func checkStreamError(t *testing.T, e *env, r result, w streamWire, c classify.Class, data string, after int) {
	t.Helper()
	calls := strings.Join(e.credsSeen(), ",")
	started, opened := after > 0, after < 0
	served := func() string {
		fin := e.rec.of(api.EventRequestFinished)
		if len(fin) != 1 {
			return fmt.Sprintf("%d request_finished", len(fin))
		}
		return fin[0].CredentialID
	}

	switch {
	case started:
		// The client has content: the rest passes through,
		// the upstream's error event last.
		if r.resp.StatusCode != 200 || !strings.Contains(r.body, data) || calls != "key-a" {
			t.Fatalf("status %d, calls %s, body has the error event: %v", r.resp.StatusCode, calls, strings.Contains(r.body, data))
		}
		if c == classify.RateLimit && e.state("key-a").State != api.StateCooling {
			t.Errorf("a rate limit after content did not cool key-a: %+v", e.state("key-a"))
		}
	case c == classify.ClientError && opened:
		// The client has the headers: the stream as the
		// upstream sent it, its error event last.
		if r.resp.StatusCode != 200 || !strings.HasPrefix(r.resp.Header.Get("Content-Type"), "text/event-stream") ||
			!strings.HasSuffix(r.body, data+"\n\n") || !strings.HasPrefix(r.body, w.opening) || calls != "key-a" {
			t.Fatalf("status %d (%s), calls %s, body %.300s", r.resp.StatusCode, r.resp.Header.Get("Content-Type"), calls, r.body)
		}
	case c == classify.ClientError:
		// The upstream's error, as the HTTP error it
		// stands for.
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if r.resp.StatusCode != 400 || !strings.HasPrefix(r.resp.Header.Get("Content-Type"), "application/json") ||
			json.Unmarshal([]byte(r.body), &body) != nil || body.Error.Message == "" || calls != "key-a" {
			t.Fatalf("status %d (%s), calls %s, body %.200s", r.resp.StatusCode, r.resp.Header.Get("Content-Type"), calls, r.body)
		}
		if r.resp.Header.Get("Content-Length") != fmt.Sprint(len(r.body)) {
			t.Errorf("content-length %q for %d bytes", r.resp.Header.Get("Content-Length"), len(r.body))
		}
	case c == classify.Capacity || c == classify.Transient:
		if r.resp.StatusCode != 200 || !strings.Contains(r.body, w.end) || calls != "key-a,key-a" {
			t.Fatalf("status %d, calls %s, body %.200s", r.resp.StatusCode, calls, r.body)
		}
	default: // rate limit, dead key: another credential
		// The headers name the credential whose stream
		// opened the answer; request_finished the one
		// that served it.
		head := "key-b"
		if opened {
			head = "key-a"
		}
		if r.resp.StatusCode != 200 || !strings.Contains(r.body, w.end) || calls != "key-a,key-b" ||
			r.resp.Header.Get("x-subpool-credential") != head || served() != "key-b" {
			t.Fatalf("status %d, calls %s, header %s, served %s, body %.200s", r.resp.StatusCode, calls,
				r.resp.Header.Get("x-subpool-credential"), served(), r.body)
		}
		if opened && strings.Count(r.body, w.opening) != 1 {
			t.Errorf("the client got the opening events %d times: %.300s", strings.Count(r.body, w.opening), r.body)
		}
	}
	if !started && strings.Contains(r.body, data) && c != classify.ClientError {
		t.Errorf("the refused stream's error event reached the client")
	}
}

// openedRefusal is a case of TestStreamOpenedRefusals: the upstream's
// steps on key-a, the calls they make, and what the client's stream
// holds.
type openedRefusal struct {
	name  string
	wire  streamWire
	opts  []envOpt
	steps []sim.Step
	calls string
	check func(t *testing.T, body string)
}

// openedRefusals are the refusals that come after a stream's opening
// events; ladder is the ladder the first one cools on.
func openedRefusals(ladder envOpt) []openedRefusal {
	return []openedRefusal{
		{
			// The pool runs out after the opening events: subpool's own
			// refusal, as an error event. Fallback is configured and
			// ready, and not taken.
			name: "exhausted, messages", wire: streamWires[0],
			opts:  []envOpt{ladder, func(o *Options, _ *sim.Options) { o.SoleProviderMax = 0 }},
			steps: []sim.Step{{StreamError: streamWires[0].event(classify.RateLimit, 0), ErrorAfter: -1}},
			calls: "key-a",
			check: func(t *testing.T, body string) {
				ev := readSSE(t, body)
				if len(ev) != 1 || ev[0].name != "error" || str(ev[0].data, "type") != "error" ||
					str(ev[0].data, "error", "type") == "" || !strings.Contains(str(ev[0].data, "error", "message"), "anthropic") {
					t.Fatalf("%q", body)
				}
			},
		},
		{
			name: "exhausted, responses", wire: streamWires[1],
			opts:  []envOpt{func(o *Options, _ *sim.Options) { o.SoleProviderMax = 0 }},
			steps: []sim.Step{{StreamError: streamWires[1].event(classify.RateLimit, 0), ErrorAfter: -1}},
			calls: "key-a",
			check: responsesErrorEvent,
		},
		{
			// The overload budget is spent: the stream as the upstream
			// sent it, its overload last.
			name: "capacity spent, messages", wire: streamWires[0],
			opts:  []envOpt{func(o *Options, _ *sim.Options) { o.CapacityMax = 0 }},
			steps: []sim.Step{{StreamError: streamWires[0].event(classify.Capacity, 0), ErrorAfter: -1}},
			calls: "key-a",
			check: func(t *testing.T, body string) {
				if !strings.HasPrefix(body, "event: message_start\n") || !strings.HasSuffix(body, streamWires[0].event(classify.Capacity, 0)+"\n\n") {
					t.Fatalf("%q", body)
				}
			},
		},
		{
			// A blip after the opening events is tried again in place, and
			// the retry is refused over HTTP: the upstream's error body
			// becomes the error event's data.
			name: "retry refused, messages", wire: streamWires[0],
			steps: []sim.Step{{StreamError: streamWires[0].event(classify.Transient, 0), ErrorAfter: -1}, sim.ServerError(400)},
			calls: "key-a,key-a",
			check: func(t *testing.T, body string) {
				ev := readSSE(t, body)
				if len(ev) != 1 || ev[0].name != "error" || str(ev[0].data, "type") != "error" ||
					str(ev[0].data, "error", "type") != "invalid_request_error" || str(ev[0].data, "error", "message") == "" {
					t.Fatalf("%q", body)
				}
			},
		},
		{
			name: "retry refused, responses", wire: streamWires[1],
			steps: []sim.Step{{StreamError: streamWires[1].event(classify.Transient, 0), ErrorAfter: -1}, sim.ServerError(400)},
			calls: "key-a,key-a",
			check: responsesErrorEvent,
		},
	}
}

// responsesErrorEvent checks that body is one Responses error event.
func responsesErrorEvent(t *testing.T, body string) {
	t.Helper()
	ev := readSSE(t, body)
	if len(ev) != 1 || ev[0].name != "error" || str(ev[0].data, "type") != "error" ||
		str(ev[0].data, "code") == "" || str(ev[0].data, "message") == "" {
		t.Fatalf("%q", body)
	}
}
