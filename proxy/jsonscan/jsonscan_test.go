package jsonscan

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestRenameModel(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"top level", `{"id":"x","model":"gpt-5.1","usage":{}}`, `{"id":"x","model":"best","usage":{}}`},
		{"message_start", `{"type":"message_start","message":{"id":"m","model" : "claude-opus-4-5","content":[]}}`,
			`{"type":"message_start","message":{"id":"m","model" : "best","content":[]}}`},
		{"responses event", `{"type":"response.created","response":{"model":"gpt-5.1","output":[]}}`,
			`{"type":"response.created","response":{"model":"best","output":[]}}`},
		{"a tool's input keeps its model", `{"model":"m","content":[{"type":"tool_use","input":{"model":"keep"}}]}`,
			`{"model":"best","content":[{"type":"tool_use","input":{"model":"keep"}}]}`},
		{"in a string", `{"text":"\"model\":\"x\"","model":"m"}`, `{"text":"\"model\":\"x\"","model":"best"}`},
		{"cut short", `{"model":"gpt-5`, `{"model":"gpt-5`},
		{"none", `{"type":"ping"}`, `{"type":"ping"}`},
	} {
		if got := string(RenameModel([]byte(c.in), "best")); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// FuzzRenameModel checks RenameModel against encoding/json: for a valid
// JSON object it gives valid JSON, equal to the input decoded with the
// top-level "model" and the one in a top-level "message" or "response"
// object set to the new name, where they are strings, and nothing else
// changed.
func FuzzRenameModel(f *testing.F) {
	for _, s := range []string{`{"model":"a"}`, `{"type":"message_start","message":{"model":"a","content":[]}}`,
		`{"response":{"model":"a","output":[{"model":"b"}]}}`, `{"text":"\"model\":\"x\"","model":"m"}`, `{"model":1}`, `[{"model":"a"}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		out := RenameModel(doc, "best")
		var in map[string]any
		if json.Unmarshal(doc, &in) != nil {
			return
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("RenameModel(%q) = %q: not JSON: %v", doc, out, err)
		}
		want := in
		rename := func(m map[string]any) {
			if _, ok := m["model"].(string); ok {
				m["model"] = "best"
			}
		}
		rename(want)
		for _, k := range []string{"message", "response"} {
			if m, ok := want[k].(map[string]any); ok {
				rename(m)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("RenameModel(%q) = %q, want %v", doc, out, want)
		}
	})
}

// FuzzScan checks Scan against json.Unmarshal for every valid JSON text
// (the proxy's FuzzInspect goes further, through every path of the
// scanner).
func FuzzScan(f *testing.F) {
	for _, s := range []string{`{"model":"m","stream":true}`, `{"MODEL":"m","model":"n"}`, `{"metadata":{"user_id":"u"},"prompt_cache_key":"k"}`,
		`{"stream":"yes"}`, `{"model":null}`, `{"messages":[{"model":"x"}],"model":"y"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, ok := Scan(doc)
		var ref struct {
			Model          string `json:"model"`
			Stream         bool   `json:"stream"`
			PromptCacheKey string `json:"prompt_cache_key"`
			Metadata       struct {
				UserID string `json:"user_id"`
			} `json:"metadata"`
		}
		if !json.Valid(doc) {
			return
		}
		if err := json.Unmarshal(doc, &ref); err != nil {
			if ok && len(doc) > 0 && firstByte(doc) == '{' {
				t.Fatalf("Scan(%q) ok, json.Unmarshal: %v", doc, err)
			}
			return
		}
		want := Fields{Model: ref.Model, Stream: ref.Stream, PromptCacheKey: ref.PromptCacheKey, UserID: ref.Metadata.UserID}
		if !ok || got != want {
			t.Fatalf("Scan(%q) = %+v, %v; json.Unmarshal %+v", doc, got, ok, want)
		}
	})
}

func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}
