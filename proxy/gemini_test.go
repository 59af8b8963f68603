package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/translate"
)

// Each client form meets each credential form: the attempt goes out in
// the credential's, and the answer is turned back into the client's.
func TestGeminiRequestForms(t *testing.T) {
	key := auth.Auth{}
	login := auth.Auth{CodeAssist: true, Project: "proj-of-login"}
	plain := []byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	envelope := []byte(`{"model":"gemini-2.5-pro","project":"proj-the-client-knew","user_prompt_id":"p1","request":{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"session_id":"s1"}}`)
	q := url.Values{"alt": {"sse"}, "key": {"sp-client-key"}}

	// Gemini API client, API key: as it came, less the client key.
	s, err := geminiRequest(translate.GeminiCall{Method: translate.GeminiStream, Model: "gemini-2.5-pro"}, "gemini-2.5-pro", q, plain, key)
	if err != nil || s.path != "/v1beta/models/gemini-2.5-pro:streamGenerateContent" || s.query != "alt=sse" || string(s.body) != string(plain) || s.wrap || s.unwrap {
		t.Errorf("api→key: %+v %v", s, err)
	}
	// Gemini API client, login: Code Assist's envelope with the login's project.
	s, err = geminiRequest(translate.GeminiCall{Method: translate.GeminiGenerate, Model: "gemini-2.5-pro"}, "gemini-2.5-flash", nil, plain, login)
	if err != nil || s.path != "/v1internal:generateContent" || !s.unwrap || s.wrap {
		t.Fatalf("api→login: %+v %v", s, err)
	}
	var env struct {
		Model, Project string
		Request        json.RawMessage
	}
	if json.Unmarshal(s.body, &env) != nil || env.Model != "gemini-2.5-flash" || env.Project != "proj-of-login" || string(env.Request) != string(plain) {
		t.Errorf("api→login body: %s", s.body)
	}
	// Code Assist client, login: the project is the login's, not the one
	// the client was told by another login.
	s, err = geminiRequest(translate.GeminiCall{CodeAssist: true, Method: translate.GeminiGenerate}, "gemini-2.5-pro", nil, envelope, login)
	if err != nil || s.path != "/v1internal:generateContent" || s.wrap || s.unwrap || !strings.Contains(string(s.body), `"project":"proj-of-login"`) || !strings.Contains(string(s.body), `"user_prompt_id":"p1"`) {
		t.Errorf("ca→login: %+v %s %v", s, s.body, err)
	}
	// Code Assist client, API key: the bare request, without Code Assist's
	// own fields, on the Gemini API path.
	s, err = geminiRequest(translate.GeminiCall{CodeAssist: true, Method: translate.GeminiStream}, "gemini-2.5-pro", nil, envelope, key)
	if err != nil || s.path != "/v1beta/models/gemini-2.5-pro:streamGenerateContent" || s.query != "alt=sse" || !s.wrap || strings.Contains(string(s.body), "session_id") || string(s.body) != string(plain) {
		t.Errorf("ca→key: %+v %s %v", s, s.body, err)
	}
	// countTokens: Code Assist names the model inside, as models/{model}.
	s, _ = geminiRequest(translate.GeminiCall{Method: translate.GeminiCount, Model: "gemini-2.5-pro"}, "gemini-2.5-pro", nil, plain, login)
	if !strings.Contains(string(s.body), `"model":"models/gemini-2.5-pro"`) || s.unwrap {
		t.Errorf("count api→login: %+v %s", s, s.body)
	}
	// Only a login answers Code Assist's own methods; a login has no model list.
	if _, err := geminiRequest(translate.GeminiCall{CodeAssist: true, Method: "loadCodeAssist"}, "", nil, []byte(`{}`), key); err == nil {
		t.Error("loadCodeAssist with a key: no error")
	}
	if _, err := geminiRequest(translate.GeminiCall{List: true}, "", nil, nil, login); err == nil {
		t.Error("model list with a login: no error")
	}
}

func TestReshapeAnswer(t *testing.T) {
	sse := func(body string) *http.Response {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}
	}
	read := func(r *http.Response) string { b, _ := io.ReadAll(r.Body); return string(b) }

	r := sse("data: {\"response\":{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]},\"traceId\":\"t\"}\r\n\r\ndata: {\"error\":{\"code\":503}}\n\n")
	reshapeAnswer(r, geminiShape{unwrap: true})
	// The trace id becomes the responseId, as Gemini CLI reads it.
	if got, want := read(r), "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}],\"responseId\":\"t\"}\r\n\r\ndata: {\"error\":{\"code\":503}}\n\n"; got != want {
		t.Errorf("unwrapped stream:\n%q\nwant\n%q", got, want)
	}
	long := strings.Repeat("x", 10<<10)
	r = sse("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"" + long + "\"}]}}]}\n\n")
	reshapeAnswer(r, geminiShape{wrap: true})
	if got := read(r); got != "data: {\"response\":{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\""+long+"\"}]}}]},\"traceId\":\"\"}\n\n" {
		t.Errorf("wrapped long event: %d bytes", len(got))
	}
	j := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}, "Content-Length": {"20"}}, Body: io.NopCloser(strings.NewReader(`{"candidates":[]}`))}
	reshapeAnswer(j, geminiShape{wrap: true})
	if got := read(j); got != `{"response":{"candidates":[]},"traceId":""}` || j.Header.Get("Content-Length") != "" || j.ContentLength != int64(len(got)) {
		t.Errorf("wrapped json %q, length %d %q", got, j.ContentLength, j.Header.Get("Content-Length"))
	}
	e := &http.Response{StatusCode: 429, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(`{"error":{"code":429}}`))}
	reshapeAnswer(e, geminiShape{wrap: true})
	if got := read(e); got != `{"error":{"code":429}}` {
		t.Errorf("an error changed: %q", got)
	}
}

func TestGoogleErrorShape(t *testing.T) {
	var v struct {
		Error struct {
			Code    int
			Message string
			Status  string
		}
	}
	if err := json.Unmarshal(errorBody("gemini", 429, "all cooling"), &v); err != nil || v.Error.Code != 429 || v.Error.Status != "RESOURCE_EXHAUSTED" || v.Error.Message != "all cooling" {
		t.Errorf("gemini error body: %+v %v", v, err)
	}
	if ev := string(statusEvent("gemini", 503, "", "x")); !strings.HasPrefix(ev, `data: {"error":{"code":503,`) || !strings.HasSuffix(ev, "\n\n") {
		t.Errorf("gemini stream error: %q", ev)
	}
}

// Gemini CLI reads neither x-should-retry nor Retry-After: whether to
// retry travels in a RetryInfo, final past 300 s.
func TestGoogleRefusalSaysWhetherToRetry(t *testing.T) {
	delay := func(b []byte) string {
		var v struct {
			Error struct {
				Details []struct {
					Type       string `json:"@type"`
					RetryDelay string `json:"retryDelay"`
				}
			}
		}
		if json.Unmarshal(b, &v) != nil || len(v.Error.Details) == 0 {
			return ""
		}
		return v.Error.Details[0].RetryDelay
	}
	if d := delay(googleRefusal(503, "every key is cooling", 0, noRetry)); d != "301s" {
		t.Errorf("final 503: retryDelay %q, want 301s", d)
	}
	if d := delay(googleRefusal(429, "cooling", 42*time.Second, mayRetry)); d != "42s" {
		t.Errorf("429 with a time: retryDelay %q, want 42s", d)
	}
	if d := delay(googleRefusal(429, "cooling", 20*time.Minute, noRetry)); d != "1200s" {
		t.Errorf("final 429 with a long time: retryDelay %q", d)
	}
	if d := delay(googleRefusal(401, "wrong client key", 0, noRetry)); d != "" {
		t.Errorf("a 401 is never retried: no RetryInfo wanted, got %q", d)
	}
	if d := delay(googleRefusal(503, "busy", 0, mayRetry)); d != "" {
		t.Errorf("a 503 that may be retried at the client's pace: got %q", d)
	}
}

func TestSetProjectOfCodeAssistCalls(t *testing.T) {
	got := string(setProject([]byte(`{"project":"theirs","metadata":{"ideName":"IDE_UNSPECIFIED","duetProject":"theirs"}}`), "ours"))
	if got != `{"metadata":{"duetProject":"ours","ideName":"IDE_UNSPECIFIED"},"project":"ours"}` {
		t.Errorf("setProject = %s", got)
	}
	if got := string(setProject([]byte(`{"tierId":"free-tier"}`), "ours")); got != `{"tierId":"free-tier"}` {
		t.Errorf("a body without a project changed: %s", got)
	}
}
