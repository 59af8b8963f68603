package sim

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The ChatGPT backend refuses what Codex CLI never sends, each with its
// own {"detail"} and no quota spent; it has no Chat Completions.
func TestCodexBackendIsStrict(t *testing.T) {
	const path = "/backend-api/codex/responses"
	s := start(t, Options{})
	for _, tc := range []struct {
		name, body string
		status     int
		detail     string
	}{
		{"Codex CLI's shape", codexBody, 200, ""},
		{"not streaming", responseBody, 400, "Stream must be set to true"},
		{"stream false", strings.Replace(codexBody, `"stream":true`, `"stream":false`, 1), 400, "Stream must be set to true"},
		{"no instructions", streaming(`{"model":"gpt-5","input":"hi"}`), 400, "Instructions are required"},
		{"empty instructions", streaming(`{"model":"gpt-5","instructions":" ","input":"hi"}`), 400, "Instructions are required"},
		{"an output cap", strings.Replace(codexBody, "{", `{"max_output_tokens":100,`, 1), 400, "Unsupported parameter: max_output_tokens"},
	} {
		status, _, b := post(t, s, path, keyO, tc.body)
		if status != tc.status || (tc.detail != "" && string(b) != `{"detail":"`+tc.detail+`"}`) {
			t.Errorf("%s: %d %s", tc.name, status, b)
		}
	}
	if status, _, _ := post(t, s, "/backend-api/codex/chat/completions", keyO, chatBody); status != 404 {
		t.Errorf("chat completions on the ChatGPT backend: %d", status)
	}
	// The refusals spent nothing: the API's route takes stream false.
	if status, _, b := post(t, s, "/v1/responses", keyO, responseBody); status != 200 {
		t.Errorf("/v1/responses: %d %s", status, b)
	}
}

// The model list names the models a client of the version asked can run.
func TestCodexModels(t *testing.T) {
	s := start(t, Options{})
	for _, tc := range []struct {
		version string
		want    []string
	}{
		{"0.171.0", []string{`"gpt-5-codex"`, `"gpt-5"`, `"gpt-5.1-codex-max"`}},
		{"0.50.2", []string{`"gpt-5-codex"`, `"gpt-5"`}},
		{"", nil},
	} {
		resp := call(t, guard(t), s, http.MethodGet, "/backend-api/codex/models?client_version="+tc.version, keyO, "")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Count(string(b), `"slug"`) != len(tc.want) {
			t.Errorf("client_version %q: %d %s", tc.version, resp.StatusCode, b)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), `"slug":`+w) {
				t.Errorf("client_version %q: %s lacks %s", tc.version, b, w)
			}
		}
	}
}

// A chat-only server (ChatOnly) answers Chat Completions and has no
// Responses API.
func TestChatOnlyServer(t *testing.T) {
	s := start(t, Options{ChatOnly: true})
	if status, _, b := post(t, s, "/v1/chat/completions", keyO, chatBody); status != 200 {
		t.Errorf("chat: %d %s", status, b)
	}
	if status, _, b := post(t, s, "/v1/responses", keyO, responseBody); status != 404 || !strings.Contains(string(b), "Invalid URL") {
		t.Errorf("responses: %d %s", status, b)
	}
}
