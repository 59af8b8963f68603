package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Ten requests over two keys alternate between them, as the upstream sees
// it, and each answer names its credential and attempt count.
func TestRequestsAlternateBetweenKeys(t *testing.T) {
	e := newEnv(t, true)
	e.key("anthropic", "key-a", "key-b")
	for i := 0; i < 10; i++ {
		resp, body := e.post("/v1/messages", msgBody)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		if resp.Header.Get("x-subpool-credential") == "" || resp.Header.Get("x-subpool-attempts") != "1" {
			t.Fatalf("missing subpool headers: %v", resp.Header)
		}
	}
	seen := e.credsSeen()
	if len(seen) != 10 {
		t.Fatalf("upstream saw %d calls", len(seen))
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] == seen[i-1] {
			t.Fatalf("calls did not alternate: %v", seen)
		}
	}
}

// The client's own key never reaches the upstream; the credential's does,
// and the client's other headers pass through.
func TestClientAuthReplacedByCredential(t *testing.T) {
	e := newEnv(t, true)
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.post("/v1/messages?beta=true", msgBody, "anthropic-beta", "interleaved-thinking-2025-05-14", "Authorization", "Bearer "+testClientKey)
	e.post("/v1/responses", `{"model":"gpt-5","input":"hi"}`, "x-api-key", "", "Authorization", "Bearer "+testClientKey)
	recs := e.up.Requests()
	if len(recs) != 2 {
		t.Fatalf("%d calls", len(recs))
	}
	a, o := recs[0], recs[1]
	if a.Header.Get("x-api-key") != "key-a" || a.Header.Get("Authorization") != "" {
		t.Errorf("anthropic auth: x-api-key=%q authorization=%q", a.Header.Get("x-api-key"), a.Header.Get("Authorization"))
	}
	if a.Header.Get("anthropic-version") != "2023-06-01" || a.Header.Get("anthropic-beta") != "interleaved-thinking-2025-05-14" || a.Query != "beta=true" {
		t.Errorf("passthrough lost: %v query=%q", a.Header, a.Query)
	}
	if o.Header.Get("Authorization") != "Bearer key-o" || o.Header.Get("x-api-key") != "" {
		t.Errorf("openai auth: %v", o.Header)
	}
	for _, r := range recs {
		for k, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, testClientKey) {
					t.Errorf("client key forwarded in %s", k)
				}
			}
		}
	}
}

// Refusals happen before any upstream call and speak the provider's shape.
func TestGuardsRefuseBeforeUpstream(t *testing.T) {
	e := newEnv(t, true)
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	for _, tc := range []struct {
		name, path string
		hdr        []string
		host       string
		status     int
	}{
		{"no key", "/v1/messages", []string{"x-api-key", ""}, "", 401},
		{"wrong key", "/v1/messages", []string{"x-api-key", "sp-wrong"}, "", 401},
		{"wrong bearer", "/v1/responses", []string{"x-api-key", "", "Authorization", "Bearer nope"}, "", 401},
		{"rebinding host", "/v1/messages", nil, "evil.example:8787", 403},
		{"browser origin", "/v1/messages", []string{"Origin", "https://evil.example"}, "", 403},
		{"browser referer", "/v1/responses", []string{"Referer", "https://evil.example/page"}, "", 403},
		{"unknown route", "/v1/complete", nil, "", 404},
		{"wrong wire for provider", "/anthropic/v1/responses", nil, "", 404},
		{"unknown provider", "/nobody/v1/messages", nil, "", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+tc.path, strings.NewReader(msgBody))
			req.Header.Set("x-api-key", testClientKey)
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				if tc.hdr[i+1] == "" {
					req.Header.Del(tc.hdr[i])
				} else {
					req.Header.Set(tc.hdr[i], tc.hdr[i+1])
				}
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			var body map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if strings.Contains(tc.path, "messages") || strings.HasPrefix(tc.path, "/anthropic") {
				if body["type"] != "error" || body["error"].(map[string]any)["message"] == "" {
					t.Errorf("not anthropic-shaped: %v", body)
				}
			} else if _, ok := body["error"].(map[string]any)["code"]; !ok {
				t.Errorf("not openai-shaped: %v", body)
			}
		})
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("upstream saw %d calls", n)
	}
	r := e.px.Refusals()
	if r.Auth.Load() != 3 || r.Host.Load() != 1 || r.Origin.Load() != 2 {
		t.Errorf("refusal counters auth=%d host=%d origin=%d", r.Auth.Load(), r.Host.Load(), r.Origin.Load())
	}
}

func TestBodyTooLargeIs413InProviderShape(t *testing.T) {
	e := newEnv(t, true, func(o *Options, _ *simOpts) { o.MaxBody = 1024 })
	e.key("anthropic", "key-a")
	resp, body := e.post("/v1/messages", `{"model":"m","pad":"`+strings.Repeat("x", 2000)+`"}`)
	if resp.StatusCode != 413 || !strings.Contains(body, "request_too_large") || !strings.Contains(body, "max_body") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if len(e.up.Requests()) != 0 {
		t.Fatal("oversized body reached the upstream")
	}
}

func TestNoCredentialsIsActionable(t *testing.T) {
	e := newEnv(t, true)
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 503 || !strings.Contains(body, "subpool add-key anthropic") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// Custom providers are reached under their own prefix, with their own pool.
func TestCustomProviderPrefix(t *testing.T) {
	e := newEnv(t, true, func(o *Options, _ *simOpts) {
		o.Providers = map[string]*Provider{
			"anthropic": {Name: "anthropic", Wire: "anthropic", Profile: lookup("anthropic")},
			"zai":       {Name: "zai", Wire: "anthropic", Profile: custom("zai", "anthropic", "credential")},
		}
	})
	e.key("anthropic", "key-a")
	e.key("zai", "zai-1")
	resp, body := e.post("/zai/v1/messages", msgBody)
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != "zai-1" {
		t.Fatalf("%d %s %v", resp.StatusCode, body, resp.Header)
	}
	resp, _ = e.post("/anthropic/v1/messages", msgBody)
	if resp.Header.Get("x-subpool-credential") != "key-a" {
		t.Fatalf("prefix /anthropic went to %s", resp.Header.Get("x-subpool-credential"))
	}
	if got := e.up.Requests(); got[0].Path != "/v1/messages" || got[1].Path != "/v1/messages" {
		t.Errorf("upstream paths %q %q", got[0].Path, got[1].Path)
	}
}
