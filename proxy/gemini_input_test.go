package proxy

import (
	"net/http"
	"strings"
	"testing"
)

func TestGeminiModelCannotRewriteTheUpstreamURL(t *testing.T) {
	e := newEnv(t, false, withGoogle)
	e.geminiKey("g1")
	for _, model := range []string{"x%3Fa=1", "x%23frag", "x%2F..%2F..%2Fv1%2Ffiles", "x%25", "..", "a%20b", "gemini-2.5-flash%3FcachedContent=c"} {
		resp, body := e.post("/v1beta/models/"+model+":generateContent", geminiBody, geminiHeaders(false)...)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "INVALID_ARGUMENT") || !strings.Contains(body, "model name") {
			t.Errorf("model %s: %d %s", model, resp.StatusCode, body)
		}
	}
	// A Code Assist body's model goes into the Gemini API's path for an
	// API key: refused the same.
	resp, body := e.post("/v1internal:generateContent", caBody("x?alt=json#"), geminiHeaders(true)...)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "model name") {
		t.Errorf("Code Assist model: %d %s", resp.StatusCode, body)
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d requests reached the upstream: %+v", n, e.up.Requests()[0])
	}
	if resp, body := e.post("/v1beta/models/gemini-2.5-flash:generateContent", geminiBody, geminiHeaders(false)...); resp.StatusCode != http.StatusOK {
		t.Fatalf("a real model: %d %s", resp.StatusCode, body)
	}
}

func TestGeminiAPIVersions(t *testing.T) {
	e := newEnv(t, false, withGoogle)
	e.geminiKey("g1")
	for _, v := range []string{"v1", "v1alpha"} {
		if resp, body := e.post("/"+v+"/models/gemini-2.5-flash:generateContent", geminiBody, geminiHeaders(false)...); resp.StatusCode != http.StatusOK {
			t.Errorf("%s on a key: %d %s", v, resp.StatusCode, body)
		}
	}
	recs := e.up.Requests()
	if len(recs) != 2 || recs[0].Path != "/v1/models/gemini-2.5-flash:generateContent" || recs[1].Path != "/v1alpha/models/gemini-2.5-flash:generateContent" {
		t.Fatalf("upstream paths %+v", recs)
	}

	e2 := newEnv(t, false, withGoogle)
	e2.googleLogin("login-1")
	for _, v := range []string{"v1", "v1alpha", "v1beta"} {
		resp, body := e2.post("/"+v+"/models/gemini-2.5-flash:streamGenerateContent?alt=sse", geminiBody, geminiHeaders(false)...)
		if resp.StatusCode != http.StatusOK || geminiText(t, body) == "" {
			t.Errorf("%s through a login: %d %s", v, resp.StatusCode, body)
		}
	}
}
