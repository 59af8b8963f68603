package proxy

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/subpool/subpool/proxy/api"
)

// One reading of a body for every decision (issue 43): a key limited to
// gpt-5* reached gpt-4o with a body whose model the scanner could not
// read but the upstream could. Such a body is now a 400 where the model
// matters, and nothing goes upstream.

const keyLimited = "sp-limited-to-gpt-5-key"

func limitedClient() *keyTable {
	return &keyTable{m: map[string]Client{keyLimited: {Name: "lim", Models: []string{"gpt-5*"}}}}
}

func TestModelLimitCannotBeSlippedPast(t *testing.T) {
	e := newEnv(t, false, withClients(limitedClient()))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	bodies := map[string]string{
		"a number first":     `{"model":1,"model":"gpt-4o","messages":[]}`,
		"an object first":    `{"model":{},"model":"gpt-4o","messages":[]}`,
		"an array first":     `{"model":[],"model":"gpt-4o","messages":[]}`,
		"true first":         `{"model":true,"model":"gpt-4o","messages":[]}`,
		"an allowed first":   `{"model":"gpt-5.1","model":"gpt-4o","messages":[]}`,
		"another case":       `{"model":"gpt-5.1","Model":"gpt-4o","messages":[]}`,
		"an escaped twin":    `{"model":"gpt-5.1","mod\u0065l":"gpt-4o","messages":[]}`,
		"a null model":       `{"model":null,"messages":[]}`,
		"a byte-order mark":  "\xEF\xBB\xBF" + `{"model":"gpt-4o","messages":[]}`,
		"not an object":      `[{"model":"gpt-4o"}]`,
		"stream of the type": `{"stream":"yes","model":"gpt-4o","messages":[]}`,
	}
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses"} {
		for name, body := range bodies {
			resp, got := e.post(path, body, "x-api-key", keyLimited)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(got, "the body ") {
				t.Errorf("%s, %s: %d %s", path, name, resp.StatusCode, got)
			}
			if path == "/v1/messages" && !strings.Contains(got, `"type":"error"`) || path != "/v1/messages" && !strings.Contains(got, `"error":{"message"`) {
				t.Errorf("%s, %s: not in the provider's shape: %s", path, name, got)
			}
		}
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d requests reached the upstream", n)
	}
	// The limit itself still holds and still lets its models through.
	if resp, got := e.post("/v1/chat/completions", `{"model":"gpt-4o","messages":[]}`, "x-api-key", keyLimited); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("gpt-4o plainly: %d %s", resp.StatusCode, got)
	}
	if resp, got := e.post("/v1/chat/completions", `{"model":"gpt-5.1","messages":[{"role":"user","content":"hi"}]}`, "x-api-key", keyLimited); resp.StatusCode != http.StatusOK {
		t.Fatalf("gpt-5.1: %d %s", resp.StatusCode, got)
	}
	fin := e.rec.of(api.EventRequestFinished)
	if fin[0].Status != http.StatusBadRequest || fin[0].Class != string(classRefused) {
		t.Fatalf("request_finished %+v, want a refusal", fin[0])
	}
}

// A limited key's body that names no model left the choice to the
// upstream, and "none" was allowed: it names its model now. A key without
// model limits, and Code Assist's calls that name none, go on as before.
func TestLimitedKeyNamesItsModel(t *testing.T) {
	keys := limitedClient()
	keys.m[testClientKey] = Client{Name: "free"}
	e := newEnv(t, false, withClients(keys))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages/count_tokens", `{"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/responses", `{"input":"hi"}`},
	} {
		resp, got := e.post(c.path, c.body, "x-api-key", keyLimited)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(got, "names none") {
			t.Errorf("%s: %d %s", c.path, resp.StatusCode, got)
		}
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d requests reached the upstream", n)
	}
	e.post("/v1/messages/count_tokens", `{"messages":[{"role":"user","content":"hi"}]}`)
	if n := len(e.up.Requests()); n != 1 {
		t.Fatalf("a key without model limits: %d upstream calls, want 1", n)
	}
}

// A key with no limits gets the same answer: the model also routes the
// request (cooldowns, aliases), and the upstream would read another one.
func TestDuplicateModelIsRefusedForAnyKey(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	resp, got := e.post("/v1/messages", `{"model":"claude-sonnet-4-5","model":"claude-opus-4-5","max_tokens":16,"messages":[]}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(got, `\"model\" twice`) {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d requests reached the upstream", n)
	}
}

// postEncoded sends body with the Content-Encoding given.
func (e *env) postEncoded(path, encoding string, body []byte, key string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, e.srv.URL+path, bytes.NewReader(body))
	req.Header.Set("x-api-key", key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", encoding)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func zlibbed(s string) []byte {
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

func deflated(s string) []byte {
	var b bytes.Buffer
	zw, _ := flate.NewWriter(&b, flate.DefaultCompression)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

// Bodies in deflate, x-gzip or "gzip, identity" went upstream with their
// model unread. They are decoded and read like gzip, and sent decoded, so
// the upstream reads what the limit read; an encoding subpool cannot read
// is a 400.
func TestEncodedBodiesAreReadForTheirModel(t *testing.T) {
	e := newEnv(t, false, withClients(limitedClient()))
	e.key("openai", "key-o")
	const forbidden = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	const allowed = `{"model":"gpt-5.1","messages":[{"role":"user","content":"hi"}]}`
	encodings := []struct {
		name string
		enc  func(string) []byte
	}{
		{"deflate", zlibbed},
		{"x-gzip", func(s string) []byte { return gz(t, s) }},
		{"gzip, identity", func(s string) []byte { return gz(t, s) }},
		{"identity, gzip", func(s string) []byte { return gz(t, s) }},
		{"gzip, gzip", func(s string) []byte { return gz(t, string(gz(t, s))) }},
	}
	for _, c := range encodings {
		if resp, got := e.postEncoded("/v1/chat/completions", c.name, c.enc(forbidden), keyLimited); resp.StatusCode != http.StatusForbidden || !strings.Contains(got, "gpt-4o") {
			t.Errorf("%s, gpt-4o: %d %s", c.name, resp.StatusCode, got)
		}
		if resp, got := e.postEncoded("/v1/chat/completions", c.name, c.enc(allowed), keyLimited); resp.StatusCode != http.StatusOK {
			t.Errorf("%s, gpt-5.1: %d %s", c.name, resp.StatusCode, got)
		}
	}
	recs := e.up.Requests()
	if len(recs) != len(encodings) {
		t.Fatalf("%d upstream calls, want %d (the allowed ones)", len(recs), len(encodings))
	}
	for _, r := range recs {
		if r.Model != "gpt-5.1" || r.Header.Get("Content-Encoding") != "" || string(r.Body) != allowed {
			t.Errorf("upstream read model %q, encoding %q, body %q; want the plain body", r.Model, r.Header.Get("Content-Encoding"), r.Body)
		}
	}
	// Bare deflate, which some clients send under the name, reads too.
	if resp, got := e.postEncoded("/v1/chat/completions", "deflate", deflated(forbidden), keyLimited); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bare deflate: %d %s", resp.StatusCode, got)
	}
	for _, c := range []struct{ enc, body string }{
		{"br", forbidden}, {"zstd", forbidden}, {"gzip", "not gzip at all"}, {"deflate", "nor deflate"},
		{"gzip, gzip, gzip, gzip, gzip", forbidden},
	} {
		resp, got := e.postEncoded("/v1/chat/completions", c.enc, []byte(c.body), keyLimited)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(got, "Content-Encoding") && !strings.Contains(got, "encoded") {
			t.Errorf("%s: %d %s", c.enc, resp.StatusCode, got)
		}
	}
	if n := len(e.up.Requests()); n != len(encodings) {
		t.Fatalf("%d upstream calls after the refusals", n)
	}
}
