package sim

import (
	"encoding/json"
	"strings"
	"testing"
)

const schema = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"note":{"type":"string"}},"required":["city","days"]}`

var toolRequests = []struct {
	path, cred, ask, toolResult string
}{
	{
		"/v1/messages", keyA,
		`{"model":"claude-sonnet-4-5","max_tokens":64,"tools":[{"name":"weather","description":"d","input_schema":` + schema + `}],"messages":[{"role":"user","content":[{"type":"text","text":"Please use the tool now"}]}]}`,
		`{"model":"claude-sonnet-4-5","max_tokens":64,"tools":[{"name":"weather","input_schema":` + schema + `}],"messages":[{"role":"user","content":"Please use the tool"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]}]}`,
	},
	{
		"/v1/responses", keyO,
		`{"model":"gpt-5","tools":[{"type":"local_shell"},{"type":"function","name":"weather","parameters":` + schema + `}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"USE THE TOOL"}]}]}`,
		`{"model":"gpt-5","tools":[{"type":"function","name":"weather","parameters":` + schema + `}],"input":[{"type":"message","role":"user","content":"use the tool"},{"type":"function_call","call_id":"c1","name":"weather","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"sunny"}]}`,
	},
	{
		"/v1/chat/completions", keyO,
		`{"model":"gpt-4.1","tools":[{"type":"function","function":{"name":"weather","parameters":` + schema + `}}],"messages":[{"role":"user","content":"use the tool please"}]}`,
		`{"model":"gpt-4.1","tools":[{"type":"function","function":{"name":"weather","parameters":` + schema + `}}],"messages":[{"role":"user","content":"use the tool"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"sunny"}]}`,
	},
}

// checkArgs asserts the arguments are a JSON object filling the schema's
// required properties with the right types.
func checkArgs(t *testing.T, args string) {
	t.Helper()
	var a map[string]any
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		t.Fatalf("arguments %q: %v", args, err)
	}
	if _, ok := a["city"].(string); !ok {
		t.Errorf("arguments %q: city not a string", args)
	}
	if _, ok := a["days"].(float64); !ok {
		t.Errorf("arguments %q: days not a number", args)
	}
	if _, ok := a["note"]; ok {
		t.Errorf("arguments %q: optional property filled", args)
	}
}

func TestToolCallJSON(t *testing.T) {
	s := start(t, Options{})
	for _, tc := range toolRequests {
		t.Run(tc.path, func(t *testing.T) {
			status, _, body := post(t, s, tc.path, tc.cred, tc.ask)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			m := decode(t, body)
			var name, args string
			switch tc.path {
			case "/v1/messages":
				if str(t, m, "stop_reason") != "tool_use" || str(t, m, "content.0.type") != "tool_use" ||
					!strings.HasPrefix(str(t, m, "content.0.id"), "toolu_") {
					t.Fatalf("message %s", body)
				}
				name = str(t, m, "content.0.name")
				b, _ := json.Marshal(get(t, m, "content.0.input"))
				args = string(b)
			case "/v1/responses":
				if str(t, m, "output.0.type") != "function_call" || str(t, m, "output.0.call_id") == "" {
					t.Fatalf("response %s", body)
				}
				name, args = str(t, m, "output.0.name"), str(t, m, "output.0.arguments")
			default:
				if str(t, m, "choices.0.finish_reason") != "tool_calls" || !isNull(t, m, "choices.0.message.content") {
					t.Fatalf("completion %s", body)
				}
				name, args = str(t, m, "choices.0.message.tool_calls.0.function.name"), str(t, m, "choices.0.message.tool_calls.0.function.arguments")
			}
			if name != "weather" {
				t.Errorf("tool %q", name)
			}
			checkArgs(t, args)
		})
	}
}

func TestToolCallStream(t *testing.T) {
	s := start(t, Options{Chunks: 4})
	for _, tc := range toolRequests {
		t.Run(tc.path, func(t *testing.T) {
			resp := call(t, guard(t), s, "POST", tc.path, tc.cred, streaming(tc.ask))
			defer resp.Body.Close()
			evs := events(t, resp.Body)
			var name, stop string
			var args strings.Builder
			pieces := 0
			for _, ev := range evs {
				if string(ev.Data) == "[DONE]" {
					continue
				}
				m := decode(t, ev.Data)
				switch tc.path {
				case "/v1/messages":
					switch ev.Name {
					case "content_block_start":
						name = str(t, m, "content_block.name")
					case "content_block_delta":
						if str(t, m, "delta.type") != "input_json_delta" {
							t.Errorf("delta %s", ev.Data)
						}
						args.WriteString(str(t, m, "delta.partial_json"))
						pieces++
					case "message_delta":
						stop = str(t, m, "delta.stop_reason")
					}
				case "/v1/responses":
					switch ev.Name {
					case "response.output_item.added":
						name = str(t, m, "item.name")
					case "response.function_call_arguments.delta":
						args.WriteString(str(t, m, "delta"))
						pieces++
					case "response.function_call_arguments.done":
						if str(t, m, "arguments") != args.String() {
							t.Errorf("done %q vs deltas %q", str(t, m, "arguments"), args.String())
						}
					case "response.completed":
						stop = str(t, m, "response.output.0.type")
					}
				default:
					choices := get(t, m, "choices").([]any)
					if len(choices) == 0 {
						continue
					}
					delta := get(t, m, "choices.0.delta").(map[string]any)
					if calls, ok := delta["tool_calls"].([]any); ok {
						fn := calls[0].(map[string]any)["function"].(map[string]any)
						if n, ok := fn["name"].(string); ok {
							name = n
						}
						if a := fn["arguments"].(string); a != "" {
							args.WriteString(a)
							pieces++
						}
					}
					if f, ok := get(t, m, "choices.0.finish_reason").(string); ok {
						stop = f
					}
				}
			}
			if name != "weather" || pieces < 2 {
				t.Errorf("tool %q in %d pieces", name, pieces)
			}
			if want := map[string]string{"/v1/messages": "tool_use", "/v1/responses": "function_call"}[tc.path]; want != "" && stop != want ||
				want == "" && stop != "tool_calls" {
				t.Errorf("stop %q", stop)
			}
			checkArgs(t, args.String())
		})
	}
}

// A tool result coming back is answered in text, or an agent would loop
// forever; a request without tools never gets a tool call, header or not.
func TestNoToolCallWhenNotAsked(t *testing.T) {
	s := start(t, Options{})
	for _, tc := range toolRequests {
		t.Run(tc.path, func(t *testing.T) {
			_, _, body := post(t, s, tc.path, tc.cred, tc.toolResult)
			callMark := map[string]string{
				"/v1/messages":         `"type":"tool_use"`,
				"/v1/responses":        `"type":"function_call"`,
				"/v1/chat/completions": `"tool_calls"`,
			}[tc.path]
			if strings.Contains(string(body), callMark) {
				t.Errorf("tool result answered with a tool call: %s", body)
			}
			if !strings.Contains(string(body), "hello hello") {
				t.Errorf("no text answer: %s", body)
			}
		})
	}
	_, _, body := post(t, s, "/v1/messages", keyA, messagesBody, "x-sim-tool", "1")
	if !strings.Contains(string(body), `"end_turn"`) {
		t.Errorf("tool call without tools: %s", body)
	}
}

// Claude Code 2.1.197 sends a "system" message after the user's turn; the
// user's turn is still the one that counts.
func TestToolCallPastTrailingSystemMessage(t *testing.T) {
	s := start(t, Options{})
	body := `{"model":"m","max_tokens":8,"tools":[{"name":"weather","input_schema":` + schema + `}],"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"please use the tool"}]},{"role":"system","content":"Available agent types: ..."}]}`
	_, _, b := post(t, s, "/v1/messages", keyA, body)
	if str(t, decode(t, b), "stop_reason") != "tool_use" {
		t.Errorf("answered %s", b)
	}
}

func TestToolCallByHeader(t *testing.T) {
	s := start(t, Options{})
	body := `{"model":"m","max_tokens":8,"tools":[{"name":"weather","input_schema":` + schema + `}],"messages":[{"role":"user","content":"hi"}]}`
	_, _, plain := post(t, s, "/v1/messages", keyA, body)
	if str(t, decode(t, plain), "stop_reason") != "end_turn" {
		t.Fatalf("no header, no phrase, yet: %s", plain)
	}
	_, _, forced := post(t, s, "/v1/messages", keyA, body, "x-sim-tool", "1")
	if str(t, decode(t, forced), "content.0.name") != "weather" {
		t.Errorf("x-sim-tool: 1 gave %s", forced)
	}
}
