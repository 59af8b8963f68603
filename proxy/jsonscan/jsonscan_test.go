package jsonscan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
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
// scanner), and its Flaw against referenceFlawed.
func FuzzScan(f *testing.F) {
	for _, s := range []string{`{"model":"m","stream":true}`, `{"MODEL":"m","model":"n"}`, `{"metadata":{"user_id":"u"},"prompt_cache_key":"k"}`,
		`{"stream":"yes"}`, `{"model":null}`, `{"messages":[{"model":"x"}],"model":"y"}`,
		`{"model":1,"model":"gpt-4o"}`, `{"a":1,"b":2,"a":3}`, `{"\u0061":1,"a":2}`, `{"ſtream":true,"stream":false}`, `[{"model":"m"}]`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, ok := Scan(doc)
		if json.Valid(doc) && (got.Flaw != "") != referenceFlawed(doc) {
			t.Fatalf("Scan(%q) flaw %q; the reference says flawed: %v", doc, got.Flaw, got.Flaw == "")
		}
		got.Flaw = ""
		var ref reference
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

// referenceFlawed is Scan's Flaw for a valid JSON text, by encoding/json:
// no object; a top-level key met twice (the wanted ones as json.Unmarshal
// folds them, which strings.EqualFold does alike, any other exactly); a
// null "model"; or a body json.Unmarshal refuses into Scan's fields.
func referenceFlawed(doc []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return true
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		k := tok.(string)
		for _, w := range []string{"model", "stream", "metadata", "prompt_cache_key", "user_id"} {
			if strings.EqualFold(k, w) {
				k = "\x00" + w // apart from any key that is exactly w
			}
		}
		if seen[k] {
			return true
		}
		seen[k] = true
		var v json.RawMessage
		if dec.Decode(&v) != nil || k == "\x00model" && string(v) == "null" {
			return true
		}
	}
	var ref reference
	return json.Unmarshal(doc, &ref) != nil
}

// reference is what Scan reads, as json.Unmarshal reads it.
type reference struct {
	Model          string `json:"model"`
	Stream         bool   `json:"stream"`
	PromptCacheKey string `json:"prompt_cache_key"`
	Metadata       struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
}

func TestScanFlaws(t *testing.T) {
	for _, c := range []struct {
		body string
		flaw string // a word the flaw must hold; "" for none
	}{
		{`{"model":"gpt-5","messages":[]}`, ""},
		{`{"model":1,"model":"gpt-4o"}`, "not a string"},
		{`{"model":{},"model":"gpt-4o"}`, "not a string"},
		{`{"model":[],"model":"gpt-4o"}`, "not a string"},
		{`{"model":true,"model":"gpt-4o"}`, "not a string"},
		{`{"model":"gpt-5","model":"gpt-4o"}`, `"model" twice`},
		{`{"model":"gpt-5","Model":"gpt-4o"}`, `twice`},
		{`{"mod\u0065l":"gpt-5","model":"gpt-4o"}`, `twice`},
		{`{"model":null}`, "null"},
		{`{"a":1,"model":"m","a":2}`, `"a" twice`},
		{`{"a":1,"\u0061":2}`, `"a" twice`},
		{`{"messages":[{"model":"x","model":"y"}],"model":"m"}`, ""},
		{"\xEF\xBB\xBF{\"model\":\"gpt-4o\"}", "byte-order mark"},
		{`[{"model":"gpt-4o"}]`, "not a JSON object"},
		{`true`, "not a JSON object"},
		{`{"model":"m" "stream":true}`, "not valid JSON"},
		{`{"stream":"yes","model":"gpt-4o"}`, `"stream"`},
		{"", ""},
		{" \n", ""},
		{manyKeys(40, ""), ""},
		{manyKeys(40, `"k3"`), `"k3" twice`},
		{manyKeys(40, `"k39"`), `"k39" twice`},
	} {
		f, _ := Scan([]byte(c.body))
		if c.flaw == "" && f.Flaw != "" || !strings.Contains(f.Flaw, c.flaw) {
			t.Errorf("Scan(%q).Flaw = %q, want one naming %q", c.body, f.Flaw, c.flaw)
		}
	}
}

// manyKeys is an object of n distinct keys, and then again, if not "".
func manyKeys(n int, again string) string {
	var b strings.Builder
	b.WriteString(`{"model":"m"`)
	for i := range n {
		fmt.Fprintf(&b, `,"k%d":%d`, i, i)
	}
	if again != "" {
		b.WriteString("," + again + ":0")
	}
	return b.String() + "}"
}
