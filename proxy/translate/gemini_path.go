package translate

// The Gemini wire's paths, read in one place: the proxy routes a client's
// path by ParseGeminiPath and shapes each attempt's from the GeminiCall.

import (
	"net/http"
	"strings"
)

// The model methods both forms serve. Code Assist's other methods
// (loadCodeAssist, onboardUser, listExperiments, retrieveUserQuota, …)
// only a login can answer.
const (
	GeminiGenerate = "generateContent"
	GeminiStream   = "streamGenerateContent"
	GeminiCount    = "countTokens"
)

// GeminiCall is what a client path on the Gemini wire asks for.
type GeminiCall struct {
	CodeAssist bool   // /v1internal…: the client speaks Code Assist
	Method     string // generateContent, streamGenerateContent, countTokens, loadCodeAssist, …
	Model      string // the Gemini API's path model; "" for Code Assist (it is in the body)
	Op         string // GET /v1internal/{op}: a long-running operation
	List       bool   // GET /v1beta/models
	Version    string // the Gemini API's version the client asked ("v1beta"); "" for Code Assist
}

// GeminiBeta and CodeAssistPrefix start the two forms' paths.
const (
	GeminiBeta       = "/v1beta/"
	CodeAssistPrefix = "/v1internal"
)

// geminiVersions are the Gemini API's versions a client may ask for.
// Gemini CLI takes any through GOOGLE_GENAI_API_VERSION and puts it in the
// path as it is (@google/genai's apiVersion, v1beta when unset, Gemini CLI
// 0.61.0); Google serves v1beta, v1 and v1alpha. An API key's attempt asks
// the upstream in the client's version, a login's goes to Code Assist,
// which has one. "/v1/models" alone stays the OpenAI model list: the
// Gemini API's list is served on the other two.
var geminiVersions = [...]string{"v1beta", "v1", "v1alpha"}

// GeminiVersion is the Gemini API version upath starts with, and the rest
// of it from "/models"; ok false for none.
func GeminiVersion(upath string) (version, rest string, ok bool) {
	for _, v := range geminiVersions {
		if rest, ok := strings.CutPrefix(upath, "/"+v+"/models"); ok {
			return v, rest, true
		}
	}
	return "", "", false
}

// ParseGeminiPath reads a Gemini-wire path; ok false for anything else.
func ParseGeminiPath(upath string) (c GeminiCall, ok bool) {
	if rest, ok := strings.CutPrefix(upath, CodeAssistPrefix); ok {
		c.CodeAssist = true
		switch {
		case strings.HasPrefix(rest, ":") && validMethod(rest[1:]):
			c.Method = rest[1:]
			return c, true
		case strings.HasPrefix(rest, "/") && len(rest) > 1 && !strings.Contains(rest, ":") && !strings.Contains(rest, ".."):
			c.Op = rest[1:]
			return c, true
		}
		return c, false
	}
	version, rest, ok := GeminiVersion(upath)
	if !ok {
		return c, false
	}
	c.Version = version
	if rest == "" {
		c.List = version != "v1"
		return c, c.List
	}
	// The model is checked when the request is served (the proxy's geminiModelRefused),
	// so that one with a '/' or a '?' in it is told why, not 404.
	rest, ok = strings.CutPrefix(rest, "/")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i <= 0 || !isModelMethod(rest[i+1:]) {
		return c, false
	}
	c.Model, c.Method = rest[:i], rest[i+1:]
	return c, true
}

func isModelMethod(m string) bool {
	return m == GeminiGenerate || m == GeminiStream || m == GeminiCount
}

// validMethod: a Code Assist method name is a plain identifier.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, r := range m {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// ModelMethod reports whether the call is one both forms answer.
func (c GeminiCall) ModelMethod() bool { return isModelMethod(c.Method) }

// HTTPMethod is the allowed HTTP method of a Gemini-wire path.
func (c GeminiCall) HTTPMethod() string {
	if c.List || c.Op != "" {
		return http.MethodGet
	}
	return http.MethodPost
}
