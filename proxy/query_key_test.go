package proxy

import (
	"strings"
	"testing"

	"github.com/subpool/subpool/proxy/classify"
)

// Nothing of the client's reaches the upstream (issue 43): its key in a
// query went upstream on every route but Gemini's, under the Gemini API's
// name or a tool's own; so did a copy of it in another header.
func TestClientKeyNeverGoesUpstreamInTheQuery(t *testing.T) {
	e := newEnv(t, false, func(o *Options, _ *simOpts) {
		o.Providers = map[string]*Provider{
			"anthropic": {Name: "anthropic", Wire: "anthropic", Profile: classify.Lookup("anthropic")},
			"openai":    {Name: "openai", Wire: "openai", Profile: classify.Lookup("openai")},
			"zai":       {Name: "zai", Wire: "anthropic", Profile: custom("zai", "anthropic", "credential")},
		}
	})
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.key("zai", "key-z")
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct{ path, body string }{
		{"/v1/messages?key=" + testClientKey, msgBody},
		{"/v1/messages/count_tokens?beta=true&key=" + testClientKey, msgBody},
		{"/v1/chat/completions?api_key=" + testClientKey, chat},
		{"/v1/responses?key=" + testClientKey + "&x=1", `{"model":"gpt-5","input":"hi"}`},
		{"/v1/embeddings?apiKey=" + testClientKey, `{"model":"text-embedding-3-small","input":"hi"}`},
		{"/zai/v1/messages?token=" + testClientKey, msgBody},
		{"/zai/v1/messages?KEY=anything-at-all", msgBody},
	} {
		e.post(c.path, c.body, "Api-Key", testClientKey)
	}
	recs := e.up.Requests()
	if len(recs) != 7 {
		t.Fatalf("%d upstream calls, want 7", len(recs))
	}
	for _, r := range recs {
		if strings.Contains(r.Query, testClientKey) || strings.Contains(strings.ToLower(r.Query), "key=") {
			t.Errorf("%s went upstream with the query %q", r.Path, r.Query)
		}
		for k, vs := range r.Header {
			if strings.Contains(strings.Join(vs, " "), testClientKey) {
				t.Errorf("%s went upstream with the client key in %s", r.Path, k)
			}
		}
	}
	// The rest of the query goes as the client wrote it.
	if recs[1].Query != "beta=true" || recs[3].Query != "x=1" {
		t.Errorf("queries kept %q and %q, want beta=true and x=1", recs[1].Query, recs[3].Query)
	}
}
