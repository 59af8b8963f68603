package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/subpool/subpool/proxy/classify"
)

// Codex's backend reports the plan's windows in a codex.rate_limits event
// before the content; the pool reads them as it reads the x-codex-*
// headers, and the event is held with the preamble, not taken for content
// (issue 24: the event was unread).
func TestCodexRateLimitsEventIsRead(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n" +
			"event: codex.rate_limits\ndata: {\"type\":\"codex.rate_limits\",\"plan_type\":\"pro\",\"rate_limits\":{\"allowed\":true,\"limit_reached\":false,\"primary\":{\"used_percent\":42,\"window_minutes\":300,\"reset_at\":1788580000},\"secondary\":{\"used_percent\":7,\"window_minutes\":10080,\"reset_at\":1789000000}}}\n\n" +
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1,\"total_tokens\":2}}}\n\n"))
	}))
	defer up.Close()
	e := newEnv(t, false, func(o *Options, _ *simOpts) {
		o.Providers = map[string]*Provider{"openai": {Name: "openai", Wire: "openai", BaseURL: up.URL, Profile: classify.Lookup("openai")}}
	})
	e.key("openai", "key-o")
	resp, body := e.post("/v1/responses", `{"model":"gpt-5","stream":true,"input":"hi"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	u := e.state("key-o").Usage
	if u == nil {
		t.Fatal("no utilization read from the codex.rate_limits event")
	}
	found := false
	for _, w := range u.Windows {
		if w.Used > 0.41 && w.Used < 0.43 {
			found = true
		}
	}
	if !found {
		t.Fatalf("windows %+v, want the primary window at 42%%", u.Windows)
	}
}
