package sim

import (
	"encoding/json"
	"net/http"
	"strings"
)

// The ChatGPT Codex backend (chatgpt.com/backend-api/codex) takes only
// what Codex CLI sends: it has no /chat/completions, and its /responses
// answers 400 to a request that does not stream, that has no
// instructions, or that caps its output (docs/subscriptions.md;
// shared/reference/protocols.md, read in Codex 0.171). Its own refusals
// are {"detail": "…"}, not the API's error object.

// codexRefusal is the backend's refusal of x's /responses request, "" when
// it takes it.
func (x *exchange) codexRefusal() string {
	if x.r.URL.Path != "/backend-api/codex/responses" {
		return ""
	}
	var req struct {
		Stream          *bool           `json:"stream"`
		Instructions    json.RawMessage `json:"instructions"`
		MaxOutputTokens json.RawMessage `json:"max_output_tokens"`
	}
	_ = json.Unmarshal(x.body, &req) // the body parsed as JSON already
	var ins string
	switch {
	case req.Stream == nil || !*req.Stream:
		return "Stream must be set to true"
	case json.Unmarshal(req.Instructions, &ins) != nil || strings.TrimSpace(ins) == "":
		return "Instructions are required"
	case len(req.MaxOutputTokens) > 0:
		return "Unsupported parameter: max_output_tokens"
	}
	return ""
}

// codexDetail is the backend's refusal body.
func codexDetail(msg string) []byte {
	b, _ := json.Marshal(map[string]string{"detail": msg})
	return b
}

// codexModelList is what GET /backend-api/codex/models lists: the slugs a
// ChatGPT plan serves through Codex, in the shape Codex CLI reads
// (codex-rs ModelsResponse), each with the least client version that can
// run it.
var codexModelList = []struct {
	slug, name string
	minimal    [3]int
}{
	{"gpt-5-codex", "gpt-5-codex", [3]int{0, 40, 0}},
	{"gpt-5", "gpt-5", [3]int{0, 40, 0}},
	{"gpt-5.1-codex-max", "gpt-5.1-codex-max", [3]int{0, 60, 0}},
}

// codexModels answers GET /backend-api/codex/models?client_version=X with
// the models a client of that version can run.
func (x *exchange) codexModels() {
	var have [3]int
	for i, part := range strings.SplitN(x.r.URL.Query().Get("client_version"), ".", 3) {
		n := 0
		for _, c := range part {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		have[i] = n
	}
	models := []obj{}
	for _, m := range codexModelList {
		if versionLess(have, m.minimal) {
			continue
		}
		models = append(models, obj{"slug": m.slug, "display_name": m.name, "visibility": "list",
			"supported_in_api": true, "minimal_client_version": m.minimal[:]})
	}
	x.w.Header().Set("ETag", `"sim-models-1"`)
	x.w.WriteHeader(http.StatusOK)
	b, _ := json.Marshal(obj{"models": models})
	x.write(b)
	x.done = true
}

func versionLess(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
