package classify

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Error bodies are decoded with encoding/json into plain maps, numbers
// kept as written (json.Number), and the few fields the tables need are
// picked out. A body that is not JSON, or was cut short, keeps its text
// for the tables' phrases: its status still decides the rest.

// Where an identifier came from; the lower, the more specific. Reasons
// show the most specific one, and an in-stream error takes its status from
// the most specific one that has one.
const (
	rankDetails = iota // error.details.error_code (Anthropic spend cap), Google's ErrorInfo.reason
	rankCode           // error.code
	rankType           // error.type, Google's error.status
	rankTop            // top-level "error" string, "code", "codex_error_info"
	rankTopType        // top-level "type" (an SSE event's own name)
)

// Message sources, best first.
const (
	msgError    = 1 + iota // error.message
	msgResponse            // response.error.message (Responses API)
	msgTop                 // top-level message
	msgDesc                // error_description (OAuth token endpoint)
	msgDetail              // detail / detail.message (older ChatGPT shape)
	msgText                // the body itself, when it is not JSON
)

type ident struct {
	s    string
	rank int
}

// fields is what an error body says.
type fields struct {
	ids     []ident // sorted by rank once parsed
	msg     string  // the upstream's message, quoted in the reason
	msgRank int     // lower wins; 0 means unset
	// text is what the tables' phrases are looked for in: the message, or
	// the whole body when it is not readable JSON (cut short, say). A cut
	// body is never quoted: half a JSON object says nothing to a person.
	text string

	resetsAt     string // unix seconds (Codex usage_limit_reached)
	resetsIn     string // seconds (Codex)
	retryAfterMS string
	retryAfterS  string

	// g is what a Google error says beyond its codes (google.go); nil
	// for every other shape.
	g *googleFields
}

// parseBody reads an error body. A body that is not a JSON object keeps
// its text as the message, unless it is HTML (a proxy's error page says
// nothing a person should read in the tray).
func parseBody(b []byte) *fields {
	f := &fields{}
	b = bytes.TrimSpace(b)
	if m := decodeError(b); m != nil {
		f.root(m)
		slices.SortStableFunc(f.ids, func(a, b ident) int { return a.rank - b.rank })
		f.text = f.msg
		if f.g != nil {
			f.g.fromMessage(strings.ToLower(f.msg))
		}
		return f
	}
	if len(b) == 0 {
		return f
	}
	switch b[0] {
	case '<': // HTML: nothing to match or quote
	case '{', '[': // JSON cut short: match its text, quote none of it
		f.text = string(b)
	default:
		f.text = string(b)
		f.setMsg(f.text, msgText)
	}
	return f
}

type object = map[string]any

// decodeError decodes an error body: a JSON object, or an array whose
// first element is one. The Gemini API and Code Assist answer the
// streaming methods with an array of responses, and refuse them with an
// array holding one error ([{"error":{…}}]); Gemini CLI reads the first
// element the same way (googleErrors.ts, parseGoogleApiError).
func decodeError(b []byte) object {
	if len(b) == 0 || b[0] != '[' {
		return decodeObject(b)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var list []any
	if dec.Decode(&list) != nil || len(list) == 0 {
		return nil
	}
	m, _ := list[0].(object)
	return m
}

// decodeObject decodes a JSON object; nil when b is not one.
func decodeObject(b []byte) object {
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // "resets_at": 1e999 is garbage to drop, not a failed body
	var m object
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// scalar returns a string's value or a number's literal; "" for anything
// else (null, booleans, containers, absent).
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

func (f *fields) addID(s string, rank int) {
	if s != "" {
		f.ids = append(f.ids, ident{s, rank})
	}
}

func (f *fields) setMsg(s string, rank int) {
	if s != "" && (f.msgRank == 0 || rank < f.msgRank) {
		f.msg, f.msgRank = s, rank
	}
}

func (f *fields) root(m object) {
	if e, ok := m["error"].(object); ok {
		f.errObj(e, msgError, 0, false)
	} else {
		f.addID(scalar(m["error"]), rankTop) // OAuth: {"error":"invalid_grant"}
	}
	for _, k := range []string{"code", "codex_error_info", "error_code"} {
		f.addID(scalar(m[k]), rankTop)
	}
	f.addID(scalar(m["type"]), rankTopType)
	f.setMsg(scalar(m["message"]), msgTop)
	f.setMsg(scalar(m["msg"]), msgTop)
	f.setMsg(scalar(m["error_description"]), msgDesc)
	if d, ok := m["detail"].(object); ok {
		f.errObj(d, msgDetail, 0, false)
	} else {
		f.setMsg(scalar(m["detail"]), msgDetail)
	}
	// A Responses API failure carries the response object, its error
	// inside.
	if r, ok := m["response"].(object); ok {
		if e, ok := r["error"].(object); ok {
			f.errObj(e, msgResponse, 0, false)
		}
	}
	f.numbers(m)
}

// errObj reads an error object: OpenAI, Anthropic and z.ai all put type,
// code and message here; Codex adds its reset fields; Anthropic's spend
// cap hides its code under details; Google names its canonical code in
// status and explains itself in a details list (google.go).
func (f *fields) errObj(m object, msgRank, depth int, details bool) {
	f.addID(scalar(m["type"]), rankType)
	if s := scalar(m["status"]); isCanonicalCode(s) {
		f.addID(s, rankType)
		f.google()
	}
	codeRank := rankCode
	if details {
		codeRank = rankDetails
	}
	f.addID(scalar(m["code"]), codeRank)
	f.addID(scalar(m["error_code"]), codeRank)
	if inner, ok := m["message"].(object); ok {
		// {"error":{"message":{"code":…,"message":…}}}: a relay wrapped
		// the real error one level down.
		if depth == 0 {
			f.errObj(inner, msgRank, depth+1, false)
		}
	} else {
		f.setMsg(scalar(m["message"]), msgRank)
	}
	switch d := m["details"].(type) {
	case object:
		if depth == 0 {
			f.errObj(d, msgRank, depth+1, true)
		}
	case []any:
		if depth == 0 {
			f.googleDetails(d)
		}
	}
	f.numbers(m)
}

// numbers reads the reset hints an object may carry.
func (f *fields) numbers(m object) {
	set := func(dst *string, key string) {
		if s := scalar(m[key]); s != "" {
			*dst = s
		}
	}
	set(&f.resetsAt, "resets_at")
	set(&f.resetsIn, "resets_in_seconds")
	set(&f.retryAfterMS, "retry_after_ms")
	set(&f.retryAfterS, "retry_after")
}

// primary is the most specific identifier, for the reason line.
func (f *fields) primary() string {
	for _, id := range f.ids {
		if !isGenericID(id.s) {
			return id.s
		}
	}
	return ""
}

// find returns the first identifier that is one of codes, ignoring case.
func (f *fields) find(codes []string) string {
	for _, id := range f.ids {
		for _, c := range codes {
			if strings.EqualFold(id.s, c) {
				return id.s
			}
		}
	}
	return ""
}

// isGenericID is an identifier that names nothing: Anthropic's top-level
// "type":"error", or a numeric HTTP status some servers echo as a code.
func isGenericID(s string) bool {
	return s == "error" || len(s) == 3 && isDigits(s)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isStreamError reports whether the data of an unnamed SSE event is an
// error rather than content: an Anthropic error typed in its data, a
// Chat Completions or Gemini {"error":{…}}, or a relayed Codex failure
// that carries only {"message":…,"codex_error_info":"server_overloaded"}.
func isStreamError(data []byte) bool {
	m := decodeError(bytes.TrimSpace(data))
	switch {
	case m == nil:
		return false // "[DONE]", a comment, nothing
	case m["type"] == "error", m["type"] == "response.failed":
		return true
	}
	return m["error"] != nil || m["codex_error_info"] != nil
}
