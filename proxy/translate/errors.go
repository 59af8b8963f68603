package translate

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// upstreamError is an error in no wire's shape: the Anthropic type it is
// (or maps to), the OpenAI type and code and the Google status, with its
// message.
type upstreamError struct {
	anthropicType string
	openaiType    string
	openaiCode    string // "" is sent as null
	googleStatus  string // "" is derived from the Anthropic type
	message       string
}

// ErrorBody translates an upstream error body to the client's error
// shape, keeping the message, so a client that reacts to error types
// (Claude Code on overloaded_error, Codex on rate_limit_exceeded) reacts
// the same way to the other provider's errors. The status stays the
// caller's; it decides the type when the body has none. A body that is
// not JSON (a proxy's HTML page) becomes the message, shortened.
//
// For a Gemini client the body's code is the one Google gives the status
// it maps to (503 for UNAVAILABLE, whatever the upstream's own status):
// Google's errors carry their HTTP code, and Gemini CLI reads it.
func ErrorBody(from, to Target, status int, body []byte) []byte {
	if from == to || wire(from) == Gemini && wire(to) == Gemini {
		return body // Code Assist's errors are Google's, unwrapped
	}
	return errorJSON(to, parseError(from, status, body))
}

// StatusBody is an error of subpool's own, of status, in to's shape with
// msg: the type (OpenAI's type and code, Google's status) the provider
// gives the status when nothing else says more, from the one table that
// also types an upstream's bare error. Google's body carries the HTTP
// status as its code, as the answer does.
func StatusBody(to Target, status int, msg string) []byte {
	if wire(to) == Gemini {
		var g gError
		g.Error.Code, g.Error.Message, g.Error.Status = status, msg, GoogleStatus(status)
		return marshal(g)
	}
	e := upstreamError{anthropicType: anthropicErrorType(status, "", ""), message: msg}
	e.openaiType, e.openaiCode = openaiErrorType(status, e.anthropicType)
	return errorJSON(to, e)
}

// OpenAICode is the code StatusBody gives status on the OpenAI wire; ""
// for none (null in the body).
func OpenAICode(status int) string {
	_, code := openaiErrorType(status, anthropicErrorType(status, "", ""))
	return code
}

// GoogleStatus is the canonical code (google.rpc.Code) Google's APIs send
// with an HTTP status.
func GoogleStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusMethodNotAllowed:
		return "UNIMPLEMENTED"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable, 529:
		return "UNAVAILABLE"
	default:
		return "INTERNAL"
	}
}

func parseError(from Target, status int, body []byte) upstreamError {
	switch wire(from) {
	case Anthropic:
		var a aError
		_ = json.Unmarshal(body, &a)
		return anthropicErr(status, a.Error.Type, a.Error.Message, body)
	case Gemini:
		g := readGoogleError(body)
		return googleErr(status, g.Error.Code, g.Error.Status, g.Error.Message, body)
	}
	var o struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
		Detail string `json:"detail"` // the ChatGPT backend's own refusals: {"detail": "…"}
	}
	_ = json.Unmarshal(body, &o)
	var code string
	if isString(o.Error.Code) {
		_ = json.Unmarshal(o.Error.Code, &code)
	}
	msg := o.Error.Message
	if msg == "" {
		msg = o.Detail
	}
	return openaiErr(status, o.Error.Type, code, msg, body)
}

// anthropicErr and openaiErr complete an error read from one wire with
// the other wire's types; body is the fallback message source.
func anthropicErr(status int, typ, msg string, body []byte) upstreamError {
	e := upstreamError{anthropicType: typ, message: msg}
	if e.message == "" {
		e.message = plainMessage(status, body)
	}
	if e.anthropicType == "" {
		e.anthropicType = anthropicErrorType(status, "", "")
	}
	e.openaiType, e.openaiCode = openaiErrorType(status, e.anthropicType)
	return e
}

func openaiErr(status int, typ, code, msg string, body []byte) upstreamError {
	e := upstreamError{openaiType: typ, openaiCode: code, message: msg}
	if e.message == "" {
		e.message = plainMessage(status, body)
	}
	e.anthropicType = anthropicErrorType(status, typ, code)
	if e.anthropicType == "api_error" && status == http.StatusServiceUnavailable {
		// OpenAI's 503 is its overload ("Slow Down", "the engine is
		// currently overloaded"), which Anthropic's API sends as 529.
		e.anthropicType = "overloaded_error"
	}
	if e.openaiType == "" {
		e.openaiType, _ = openaiErrorType(status, e.anthropicType)
	}
	return e
}

func plainMessage(status int, body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" || !utf8.ValidString(s) {
		if t := http.StatusText(status); t != "" {
			return t
		}
		return "upstream error"
	}
	if len(s) > 500 {
		s = s[:500]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// anthropicErrorType picks the Anthropic type for an OpenAI error, by
// its type or code where they are telling, else by status as Anthropic's
// API errors page lists them (400, 401, 402, 403, 404, 413, 429, 500,
// 504 and 529 overloaded_error; a 503 is none of Anthropic's, so an
// api_error like any other 5xx). Status 0 is an error inside a stream,
// which has no status of its own.
func anthropicErrorType(status int, typ, code string) string {
	switch {
	case typ == "insufficient_quota" || code == "insufficient_quota":
		return "billing_error"
	case typ == "usage_limit_reached" || code == "rate_limit_exceeded" || typ == "requests" || typ == "tokens":
		return "rate_limit_error"
	case code == "server_is_overloaded":
		return "overloaded_error"
	case code == "invalid_api_key":
		return "authentication_error"
	case code == "context_length_exceeded":
		return "invalid_request_error"
	}
	switch {
	case status == 401:
		return "authentication_error"
	case status == 402:
		return "billing_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 413:
		return "request_too_large"
	case status == 429:
		return "rate_limit_error"
	case status == 529:
		return "overloaded_error"
	case status == 504:
		return "timeout_error"
	case status >= 500:
		return "api_error"
	case status >= 400:
		return "invalid_request_error"
	case typ == "invalid_request_error":
		return typ
	}
	return "api_error"
}

// openaiErrorType picks OpenAI's type and code for an Anthropic type.
func openaiErrorType(status int, typ string) (string, string) {
	switch typ {
	case "invalid_request_error":
		return "invalid_request_error", ""
	case "authentication_error":
		return "invalid_request_error", "invalid_api_key"
	case "permission_error", "not_found_error":
		return "invalid_request_error", ""
	case "request_too_large":
		return "invalid_request_error", "request_too_large"
	case "rate_limit_error":
		return "requests", "rate_limit_exceeded"
	case "billing_error":
		return "insufficient_quota", "insufficient_quota"
	case "overloaded_error":
		// What the ChatGPT backend sends when it is overloaded.
		return "server_error", "server_is_overloaded"
	case "api_error", "timeout_error":
		return "server_error", ""
	}
	if status >= 400 && status < 500 {
		return "invalid_request_error", ""
	}
	return "server_error", ""
}

// readGoogleError reads Google's error body; a streamGenerateContent
// without alt=sse answers a list of them.
func readGoogleError(body []byte) gError {
	var g gError
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		var list []gError
		if json.Unmarshal(body, &list) == nil && len(list) > 0 {
			g = list[0]
		}
		return g
	}
	_ = json.Unmarshal(body, &g)
	return g
}

// googleErr completes an error read from Google's shape. code is the
// body's own (an error inside a stream has no status but that).
func googleErr(status, code int, gstatus, msg string, body []byte) upstreamError {
	if code == 0 {
		code = status
	}
	e := upstreamError{googleStatus: gstatus, message: msg}
	if e.message == "" {
		e.message = plainMessage(code, body)
	}
	e.anthropicType = anthropicTypeFromGoogle(gstatus, code)
	e.openaiType, e.openaiCode = openaiErrorType(code, e.anthropicType)
	return e
}

// anthropicTypeFromGoogle maps a google.rpc status (what Gemini CLI and
// the proxy's classifier go by), else the code.
func anthropicTypeFromGoogle(status string, code int) string {
	switch status {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return "invalid_request_error"
	case "UNAUTHENTICATED":
		return "authentication_error"
	case "PERMISSION_DENIED":
		return "permission_error"
	case "NOT_FOUND":
		return "not_found_error"
	case "RESOURCE_EXHAUSTED":
		return "rate_limit_error"
	case "UNAVAILABLE":
		return "overloaded_error"
	case "DEADLINE_EXCEEDED":
		return "timeout_error"
	case "INTERNAL", "UNKNOWN", "DATA_LOSS", "CANCELLED":
		return "api_error"
	}
	if code == http.StatusServiceUnavailable {
		return "overloaded_error" // Google's 503 is UNAVAILABLE
	}
	return anthropicErrorType(code, "", "")
}

// google is the error's Google status and the HTTP code Google gives it.
func (e upstreamError) google() (int, string) {
	status := e.googleStatus
	if status == "" {
		switch e.anthropicType {
		case "invalid_request_error", "request_too_large":
			status = "INVALID_ARGUMENT"
		case "authentication_error":
			status = "UNAUTHENTICATED"
		case "permission_error":
			status = "PERMISSION_DENIED"
		case "not_found_error":
			status = "NOT_FOUND"
		case "rate_limit_error", "billing_error":
			// Spent credit is a quota to Google too.
			status = "RESOURCE_EXHAUSTED"
		case "overloaded_error":
			status = "UNAVAILABLE"
		case "timeout_error":
			status = "DEADLINE_EXCEEDED"
		default:
			status = "INTERNAL"
		}
	}
	codes := map[string]int{
		"INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400,
		"UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "NOT_FOUND": 404,
		"ABORTED": 409, "ALREADY_EXISTS": 409, "RESOURCE_EXHAUSTED": 429, "CANCELLED": 499,
		"UNIMPLEMENTED": 501, "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504,
	}
	code, ok := codes[status]
	if !ok {
		code = 500 // INTERNAL, UNKNOWN, DATA_LOSS and any other
	}
	return code, status
}

func geminiErrorJSON(e upstreamError) []byte {
	code, status := e.google()
	var g gError
	g.Error.Code, g.Error.Message, g.Error.Status = code, e.message, status
	return marshal(g)
}

func anthropicErrorJSON(e upstreamError) []byte {
	var a aError
	a.Type = "error"
	a.Error.Type, a.Error.Message = e.anthropicType, e.message
	return marshal(a)
}

type openaiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e upstreamError) openai() openaiError {
	o := openaiError{Message: e.message, Type: e.openaiType}
	if e.openaiCode != "" {
		o.Code = &e.openaiCode
	}
	return o
}

func openaiErrorJSON(e upstreamError) []byte {
	return marshal(struct {
		Error openaiError `json:"error"`
	}{e.openai()})
}

// streamError reads an error event of an upstream stream: Anthropic's
// "error" event, a Chat chunk carrying "error", Responses' "error" and
// "response.failed", a Google error object in a Gemini stream.
func streamError(from Target, event string, data []byte) (upstreamError, bool) {
	switch wire(from) {
	case Gemini:
		if !bytes.Contains(data, []byte(`"error"`)) {
			return upstreamError{}, false
		}
		var o struct {
			Error json.RawMessage `json:"error"`
		}
		raw := bytes.TrimSpace(data)
		if bytes.HasPrefix(raw, []byte("[")) {
			var list []json.RawMessage
			if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
				return upstreamError{}, false
			}
			raw = list[0]
		}
		if json.Unmarshal(raw, &o) != nil || !isObject(o.Error) {
			return upstreamError{}, false
		}
		return parseError(Gemini, 0, data), true
	case Anthropic:
		if event != "error" && !bytes.Contains(data, []byte(`"type":"error"`)) {
			return upstreamError{}, false
		}
		var a aError
		if json.Unmarshal(data, &a) != nil || a.Type != "error" {
			return upstreamError{}, false
		}
		return parseError(Anthropic, 0, data), true
	case OpenAIChat:
		if !bytes.Contains(data, []byte(`"error"`)) {
			return upstreamError{}, false
		}
		var o struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &o) != nil || isNull(o.Error) {
			return upstreamError{}, false
		}
		return parseError(OpenAIChat, 0, data), true
	case OpenAIResponses:
		var o struct {
			Code     string `json:"code"`
			Message  string `json:"message"`
			Response struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			} `json:"response"`
		}
		switch event {
		case "error":
			_ = json.Unmarshal(data, &o)
			return openaiErr(0, "", o.Code, o.Message, nil), true
		case "response.failed":
			_ = json.Unmarshal(data, &o)
			return openaiErr(0, "", o.Response.Error.Code, o.Response.Error.Message, nil), true
		}
	}
	return upstreamError{}, false
}
