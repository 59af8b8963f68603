package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestGeminiGenerateJSON(t *testing.T) {
	s, _ := googleStart(t, Options{}, GoogleLogin{})
	status, hdr, body := gcall(t, s, "POST", geminiPath, geminiKey, geminiBodyHi)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	m := decode(t, body)
	for path, want := range map[string]string{
		"candidates.0.content.role":                    "model",
		"candidates.0.content.parts.0.text":            strings.Repeat("hello ", 5),
		"candidates.0.finishReason":                    "STOP",
		"modelVersion":                                 "gemini-2.5-pro",
		"usageMetadata.promptTokensDetails.0.modality": "TEXT",
	} {
		if got := str(t, m, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	in, out := num(t, m, "usageMetadata.promptTokenCount"), num(t, m, "usageMetadata.candidatesTokenCount")
	if in < 1 || out < 1 || num(t, m, "usageMetadata.totalTokenCount") != in+out {
		t.Errorf("usage %v", get(t, m, "usageMetadata"))
	}
	if str(t, m, "responseId") == "" {
		t.Error("no responseId")
	}
	if _, ok := m["createTime"]; ok {
		t.Error("the Gemini API stamps no createTime; Code Assist does")
	}
	if !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") || hdr.Get("x-ratelimit-remaining-requests") != "" || hdr.Get("x-request-id") != "" {
		t.Errorf("headers %v", hdr)
	}
	recs := s.Requests()
	if len(recs) != 1 || recs[0].Credential != geminiKey || recs[0].Model != "gemini-2.5-pro" || recs[0].Stream || recs[0].Status != 200 {
		t.Errorf("records %+v", recs)
	}
}

// What Gemini CLI's SDK reads: bare data lines, CRLF between events, a
// GenerateContentResponse each, the last with finishReason and usage.
func TestGeminiStreamSSE(t *testing.T) {
	s, _ := googleStart(t, Options{Chunks: 3, ChunkText: "ab"}, GoogleLogin{})
	// ?key= is the other way the Gemini API takes a key.
	resp, err := googleDo(guard(t), s, "POST", geminiStreamPath+"&key="+geminiKey, "", geminiBodyHi)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v: %s", resp.StatusCode, resp.Header, raw)
	}
	if bytes.Contains(raw, []byte("event:")) || bytes.Count(raw, []byte("\r\n\r\n")) != 4 {
		t.Fatalf("framing is not Google's data-only CRLF SSE:\n%q", raw)
	}
	evs := events(t, bytes.NewReader(raw))
	if len(evs) != 4 {
		t.Fatalf("%d events, want 3 deltas and the last", len(evs))
	}
	var text strings.Builder
	for i, ev := range evs {
		m := decode(t, ev.Data)
		text.WriteString(str(t, m, "candidates.0.content.parts.0.text"))
		_, finished := get(t, m, "candidates.0").(map[string]any)["finishReason"]
		if last := i == len(evs)-1; finished != last {
			t.Errorf("event %d: finishReason present=%v", i, finished)
		}
		if str(t, m, "responseId") != str(t, decode(t, evs[0].Data), "responseId") {
			t.Error("responseId changed within the stream")
		}
	}
	last := decode(t, evs[3].Data)
	if text.String() != "ababab" || num(t, last, "usageMetadata.candidatesTokenCount") < 1 {
		t.Errorf("text %q, last %s", text.String(), evs[3].Data)
	}
	if recs := s.Requests(); len(recs) != 1 || !recs[0].Stream || recs[0].Credential != geminiKey {
		t.Errorf("records %+v", recs)
	}
}

// Without alt=sse, streamGenerateContent answers a JSON array of the
// same chunks.
func TestGeminiStreamWithoutSSE(t *testing.T) {
	s, _ := googleStart(t, Options{Chunks: 2}, GoogleLogin{})
	status, _, body := gcall(t, s, "POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", geminiKey, geminiBodyHi)
	var chunks []map[string]any
	if err := json.Unmarshal(body, &chunks); status != 200 || err != nil || len(chunks) != 3 {
		t.Fatalf("%d %v: %s", status, err, body)
	}
	if str(t, chunks[2], "candidates.0.finishReason") != "STOP" || str(t, chunks[0], "modelVersion") != "gemini-2.5-flash" {
		t.Errorf("chunks %s", body)
	}
}

func TestGeminiCountTokensAndModels(t *testing.T) {
	s, _ := googleStart(t, Options{}, GoogleLogin{})
	status, _, body := gcall(t, s, "POST", "/v1beta/models/gemini-2.5-pro:countTokens", geminiKey, geminiBodyHi)
	if m := decode(t, body); status != 200 || num(t, m, "totalTokens") != int64(Tokens(len(geminiBodyHi))) {
		t.Errorf("countTokens %d %s", status, body)
	}

	status, _, body = gcall(t, s, "GET", "/v1beta/models", geminiKey, "")
	var list struct {
		Models []struct {
			Name, DisplayName, Version string
			InputTokenLimit            int
			SupportedGenerationMethods []string
		}
	}
	if err := json.Unmarshal(body, &list); status != 200 || err != nil || len(list.Models) == 0 {
		t.Fatalf("models %d %v %s", status, err, body)
	}
	pro := list.Models[0]
	if pro.Name != "models/gemini-2.5-pro" || pro.DisplayName != "Gemini 2.5 Pro" || pro.InputTokenLimit != 1048576 ||
		!slices.Contains(pro.SupportedGenerationMethods, "generateContent") || !slices.Contains(pro.SupportedGenerationMethods, "countTokens") {
		t.Errorf("first model %+v", pro)
	}

	status, _, body = gcall(t, s, "GET", "/v1beta/models/gemini-2.5-flash", geminiKey, "")
	if m := decode(t, body); status != 200 || str(t, m, "name") != "models/gemini-2.5-flash" {
		t.Errorf("get model %d %s", status, body)
	}
	status, _, body = gcall(t, s, "GET", "/v1beta/models/gemini-0-nope", geminiKey, "")
	if e := googleError(t, body); status != 404 || e.Error.Status != "NOT_FOUND" || !strings.Contains(e.Error.Message, "models/gemini-0-nope is not found") {
		t.Errorf("unknown model %d %s", status, body)
	}
}

// Refusals before any script, in Google's shape.
func TestGeminiRefusals(t *testing.T) {
	s, _ := googleStart(t, Options{}, GoogleLogin{})
	for _, tc := range []struct {
		name, method, path, key, body string
		hdr                           []string
		status                        int
		rpcStatus, reason             string
	}{
		{"no key", "POST", geminiPath, "", geminiBodyHi, nil, 403, "PERMISSION_DENIED", ""},
		{"a bearer is no key", "POST", geminiPath, "", geminiBodyHi, []string{"Authorization", "Bearer " + loginToken}, 403, "PERMISSION_DENIED", ""},
		{"unknown key", "POST", geminiPath, "AIzaSy-never-issued", geminiBodyHi, nil, 400, "INVALID_ARGUMENT", "API_KEY_INVALID"},
		{"unknown key in the query", "POST", geminiPath + "?key=AIzaSy-never-issued", "", geminiBodyHi, nil, 400, "INVALID_ARGUMENT", "API_KEY_INVALID"},
		{"unknown method", "POST", "/v1beta/models/gemini-2.5-pro:embedNothing", geminiKey, geminiBodyHi, nil, 404, "NOT_FOUND", ""},
		{"wrong verb", "GET", geminiPath, geminiKey, "", nil, 404, "NOT_FOUND", ""},
		{"bad json", "POST", geminiPath, geminiKey, "{nope", nil, 400, "INVALID_ARGUMENT", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, hdr, body := gcall(t, s, tc.method, tc.path, tc.key, tc.body, tc.hdr...)
			e := googleError(t, body)
			if status != tc.status || e.Error.Code != tc.status || e.Error.Status != tc.rpcStatus {
				t.Fatalf("got %d %s", status, body)
			}
			if len(e.Error.Errors) != 0 {
				t.Error("the Gemini API sends no legacy errors list")
			}
			if tc.reason != "" {
				if reason, _, md := e.errorInfo(t); reason != tc.reason || md["service"] != "generativelanguage.googleapis.com" {
					t.Errorf("ErrorInfo %s %v", reason, md)
				}
			}
			if ct := hdr.Get("Content-Type"); ct != "application/json; charset=UTF-8" {
				t.Errorf("content-type %q", ct)
			}
			if bytes.Contains(body, []byte("never-issued")) {
				t.Error("the refusal repeats the key")
			}
		})
	}
	// A key added later is good from then on.
	s.AddGoogleKey("AIzaSy-late")
	if status, _, body := gcall(t, s, "POST", geminiPath, "AIzaSy-late", geminiBodyHi); status != 200 {
		t.Errorf("added key: %d %s", status, body)
	}
}

const geminiSchema = `{"type":"OBJECT","properties":{"city":{"type":"STRING"},"days":{"type":"INTEGER"},"note":{"type":"STRING"}},"required":["city","days"]}`

func geminiToolBody(last string, schemaField string) string {
	return `{"contents":[{"role":"user","parts":[{"text":"weather?"}]},` + last + `],` +
		`"tools":[{"functionDeclarations":[{"name":"weather","description":"d","` + schemaField + `":` + geminiSchema + `}]}]}`
}

func TestGeminiToolCall(t *testing.T) {
	s, _ := googleStart(t, Options{Chunks: 3}, GoogleLogin{})
	ask := geminiToolBody(`{"role":"user","parts":[{"text":"Please USE THE TOOL"}]}`, "parameters")
	askJSONSchema := geminiToolBody(`{"role":"user","parts":[{"text":"use the tool"}]}`, "parametersJsonSchema")
	result := geminiToolBody(`{"role":"model","parts":[{"functionCall":{"name":"weather","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"output":"sunny"}}}]}`, "parameters")
	plain := geminiToolBody(`{"role":"user","parts":[{"text":"just talk"}]}`, "parameters")

	call := func(t *testing.T, m map[string]any) {
		t.Helper()
		fc := get(t, m, "candidates.0.content.parts.0.functionCall")
		if str(t, fc, "name") != "weather" {
			t.Errorf("functionCall %v", fc)
		}
		b, _ := json.Marshal(get(t, fc, "args"))
		checkArgs(t, string(b))
		if str(t, m, "candidates.0.content.parts.0.thoughtSignature") == "" {
			t.Error("no thoughtSignature on the call")
		}
	}
	for name, body := range map[string]string{"parameters": ask, "parametersJsonSchema": askJSONSchema} {
		t.Run(name, func(t *testing.T) {
			status, _, b := gcall(t, s, "POST", geminiPath, geminiKey, body)
			if status != 200 {
				t.Fatalf("%d %s", status, b)
			}
			call(t, decode(t, b))
		})
	}
	t.Run("stream", func(t *testing.T) {
		resp, err := googleDo(guard(t), s, "POST", geminiStreamPath, geminiKey, ask)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		evs := events(t, resp.Body)
		if len(evs) != 2 {
			t.Fatalf("%d events: a call arrives whole, then the last chunk", len(evs))
		}
		call(t, decode(t, evs[0].Data))
		if str(t, decode(t, evs[1].Data), "candidates.0.finishReason") != "STOP" {
			t.Errorf("last %s", evs[1].Data)
		}
	})
	t.Run("header", func(t *testing.T) {
		_, _, b := gcall(t, s, "POST", geminiPath, geminiKey, plain, "x-sim-tool", "1")
		call(t, decode(t, b))
	})
	for name, body := range map[string]string{"function response": result, "no ask": plain} {
		t.Run(name, func(t *testing.T) {
			_, _, b := gcall(t, s, "POST", geminiPath, geminiKey, body)
			if got := str(t, decode(t, b), "candidates.0.content.parts.0.text"); got != strings.Repeat("hello ", 3) {
				t.Errorf("text %q", got)
			}
		})
	}
}

// Gemini CLI's model router asks for JSON matching a schema; an answer
// that parses lets it route instead of falling back.
func TestGeminiJSONMode(t *testing.T) {
	s, _ := googleStart(t, Options{Chunks: 4}, GoogleLogin{})
	body := `{"contents":[{"role":"user","parts":[{"text":"route me"}]}],"generationConfig":{"responseMimeType":"application/json",` +
		`"responseJsonSchema":{"type":"object","properties":{"reasoning":{"type":"string"},"model_choice":{"type":"string","enum":["flash","pro"]}},"required":["reasoning","model_choice"]}}}`
	for _, path := range []string{geminiPath, geminiStreamPath} {
		t.Run(path, func(t *testing.T) {
			resp, err := googleDo(guard(t), s, "POST", path, geminiKey, body)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var text strings.Builder
			if strings.Contains(path, "alt=sse") {
				for _, ev := range events(t, resp.Body) {
					text.WriteString(str(t, decode(t, ev.Data), "candidates.0.content.parts.0.text"))
				}
			} else {
				b, _ := io.ReadAll(resp.Body)
				text.WriteString(str(t, decode(t, b), "candidates.0.content.parts.0.text"))
			}
			var got struct {
				Reasoning   string `json:"reasoning"`
				ModelChoice string `json:"model_choice"`
			}
			if err := json.Unmarshal([]byte(text.String()), &got); err != nil || got.ModelChoice != "flash" || got.Reasoning == "" {
				t.Errorf("answer %q: %v", text.String(), err)
			}
		})
	}
}

// A scripted step waits for its model: the path's model on the Gemini API.
func TestGeminiStepForModel(t *testing.T) {
	s, _ := googleStart(t, Options{}, GoogleLogin{})
	st := GoogleOverloaded()
	st.Model = "gemini-2.5-pro"
	s.Script(geminiKey, st)
	if status, _, _ := gcall(t, s, "POST", "/v1beta/models/gemini-2.5-flash:generateContent", geminiKey, geminiBodyHi); status != 200 {
		t.Errorf("flash got the pro step: %d", status)
	}
	if status, _, _ := gcall(t, s, "POST", geminiPath, geminiKey, geminiBodyHi); status != http.StatusServiceUnavailable {
		t.Errorf("pro: %d", status)
	}
}
