package sim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

const (
	geminiKey  = "AIzaSy-sim-test-key-a"
	geminiKeyB = "AIzaSy-sim-test-key-b"
	loginToken = "ya29.sim-test-login-a"

	geminiPath       = "/v1beta/models/gemini-2.5-pro:generateContent"
	geminiStreamPath = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
	assistPath       = "/v1internal:generateContent"
	assistStreamPath = "/v1internal:streamGenerateContent?alt=sse"

	geminiBodyHi = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"temperature":0}}`
)

// assistBody is Gemini CLI's envelope around a request, for project.
func assistBody(project, model, request string) string {
	b, _ := json.Marshal(map[string]any{"model": model, "project": project, "user_prompt_id": "p-1", "request": json.RawMessage(request)})
	return string(b)
}

// googleDo sends a request the way Gemini CLI does: x-goog-api-key on the
// Gemini API, a bearer token on Code Assist.
func googleDo(ctx context.Context, s *Server, method, path, cred, body string, hdr ...string) (*http.Response, error) {
	return googleDoAt(ctx, s.URL(), method, path, cred, body, hdr...)
}

// googleDoAt is googleDo at base, such as an OAuthServer's URL.
func googleDoAt(ctx context.Context, base, method, path, cred, body string, hdr ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if cred != "" {
		if isGeminiPath(req.URL.Path) {
			req.Header.Set("x-goog-api-key", cred)
		} else {
			req.Header.Set("Authorization", "Bearer "+cred)
		}
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return http.DefaultClient.Do(req)
}

// gcall sends a Google request and returns the status, headers and body.
func gcall(t *testing.T, s *Server, method, path, cred, body string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	return gcallAt(t, s.URL(), method, path, cred, body, hdr...)
}

func gcallAt(t *testing.T, base, method, path, cred, body string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := googleDoAt(guard(t), base, method, path, cred, body, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// googleError decodes a google.rpc.Status body, unwrapping the array Code
// Assist's streaming method sends.
type googleStatusBody struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Errors  []struct {
			Message, Domain, Reason string
		} `json:"errors"`
		Details []map[string]any `json:"details"`
	} `json:"error"`
}

func googleError(t *testing.T, b []byte) googleStatusBody {
	t.Helper()
	var e googleStatusBody
	if len(b) > 0 && b[0] == '[' {
		var arr []googleStatusBody
		if err := json.Unmarshal(b, &arr); err != nil || len(arr) != 1 {
			t.Fatalf("not a one-element array of google.rpc.Status: %v\n%s", err, b)
		}
		e = arr[0]
	} else if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("not a google.rpc.Status: %v\n%s", err, b)
	}
	if e.Error.Code == 0 || e.Error.Message == "" || e.Error.Status == "" {
		t.Fatalf("google.rpc.Status lacks code, message or status:\n%s", b)
	}
	return e
}

// detail is the first detail of type ("ErrorInfo", "RetryInfo" …), or nil.
func (e googleStatusBody) detail(typ string) map[string]any {
	for _, d := range e.Error.Details {
		if d["@type"] == "type.googleapis.com/google.rpc."+typ {
			return d
		}
	}
	return nil
}

func (e googleStatusBody) errorInfo(t *testing.T) (reason, domain string, metadata map[string]any) {
	t.Helper()
	d := e.detail("ErrorInfo")
	if d == nil {
		t.Fatalf("no ErrorInfo in %+v", e.Error.Details)
	}
	md, _ := d["metadata"].(map[string]any)
	reason, _ = d["reason"].(string)
	domain, _ = d["domain"].(string)
	return reason, domain, md
}

func (e googleStatusBody) retryDelay() string {
	d := e.detail("RetryInfo")
	if d == nil {
		return ""
	}
	s, _ := d["retryDelay"].(string)
	return s
}

func (e googleStatusBody) quotaID(t *testing.T) string {
	t.Helper()
	d := e.detail("QuotaFailure")
	if d == nil {
		t.Fatalf("no QuotaFailure in %+v", e.Error.Details)
	}
	v := d["violations"].([]any)[0].(map[string]any)
	return v["quotaId"].(string)
}

// googleStart runs a sim with a Gemini key and a login registered.
func googleStart(t *testing.T, opts Options, l GoogleLogin) (s *Server, project string) {
	t.Helper()
	s = start(t, opts)
	s.AddGoogleKey(geminiKey)
	return s, s.AddGoogleLogin(loginToken, l)
}
