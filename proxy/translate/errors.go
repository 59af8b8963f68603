package translate

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// upstreamError is an error in neither wire's shape: the Anthropic type
// it is (or maps to) and the OpenAI type and code, with its message.
type upstreamError struct {
	anthropicType string
	openaiType    string
	openaiCode    string // "" is sent as null
	message       string
}

// ErrorBody translates an upstream error body to the client's error
// shape, keeping the message, so a client that reacts to error types
// (Claude Code on overloaded_error, Codex on rate_limit_exceeded) reacts
// the same way to the other provider's errors. The status stays the
// caller's; it decides the type when the body has none. A body that is
// not JSON (a proxy's HTML page) becomes the message, shortened.
func ErrorBody(from, to Target, status int, body []byte) []byte {
	if from == to {
		return body
	}
	e := parseError(from, status, body)
	if to == Anthropic {
		return anthropicErrorJSON(e)
	}
	return openaiErrorJSON(e)
}

func parseError(from Target, status int, body []byte) upstreamError {
	if from == Anthropic {
		var a aError
		_ = json.Unmarshal(body, &a)
		return anthropicErr(status, a.Error.Type, a.Error.Message, body)
	}
	var o struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &o)
	var code string
	if isString(o.Error.Code) {
		_ = json.Unmarshal(o.Error.Code, &code)
	}
	return openaiErr(status, o.Error.Type, code, o.Error.Message, body)
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
// its type or code where they are telling, else by status. Status 0 is
// an error inside a stream, which has no status of its own.
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
	case status == 503 || status == 529:
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
// "response.failed".
func streamError(from Target, event string, data []byte) (upstreamError, bool) {
	switch from {
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
