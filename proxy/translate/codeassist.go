package translate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// The Code Assist envelope, as Gemini CLI writes it in "Login with Google"
// mode (packages/core/src/code_assist/converter.ts, toGenerateContentRequest
// and fromGenerateContentResponse):
//
//	request: {"model": "gemini-2.5-pro", "project": "<id>", "user_prompt_id": "…",
//	          "request": {<generateContent request>, "session_id": "…"}}
//	answer:  {"response": {<GenerateContentResponse>}, "traceId": "…"}
//
// and each stream event is data: {"response": {…}}. Gemini CLI takes the
// answer's responseId from traceId.

// CodeAssist holds the envelope fields of a Code Assist generateContent
// request that a proxy reads or sets.
type CodeAssist struct {
	// Model is the model asked for ("gemini-2.5-pro"); Code Assist has it
	// here, where the Gemini API has it in the URL.
	Model string
	// Project is the Google Cloud project the request is billed to: the
	// one loadCodeAssist or onboardUser gave the credential.
	Project string
	// UserPromptID names the user prompt a request serves; the turns of
	// one tool loop share it.
	UserPromptID string
}

type caEnvelope struct {
	Model        string          `json:"model"`
	Project      string          `json:"project,omitempty"`
	UserPromptID string          `json:"user_prompt_id,omitempty"`
	Request      json.RawMessage `json:"request"`
}

// ReadCodeAssist reads the envelope fields of a Code Assist request.
func ReadCodeAssist(body []byte) (CodeAssist, error) {
	env, err := readEnvelope(body)
	return CodeAssist{Model: env.Model, Project: env.Project, UserPromptID: env.UserPromptID}, err
}

// SetCodeAssist sets the envelope fields of a Code Assist request that
// ca has (the empty ones are left as they are) and keeps everything else.
func SetCodeAssist(body []byte, ca CodeAssist) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("translate: code assist request: %w", err)
	}
	if m == nil {
		return nil, errors.New("translate: code assist request: not an object")
	}
	for k, v := range map[string]string{"model": ca.Model, "project": ca.Project, "user_prompt_id": ca.UserPromptID} {
		if v != "" {
			m[k] = marshal(v)
		}
	}
	return marshal(m), nil
}

// WrapCodeAssist puts a generateContent request (the Gemini API's body)
// into the envelope with ca's fields. Without a UserPromptID it derives
// one from the request's prompts: the same through one tool loop, new
// with the next prompt, as Gemini CLI's are.
func WrapCodeAssist(request []byte, ca CodeAssist) ([]byte, error) {
	var inner struct {
		Contents []gContent `json:"contents"`
	}
	if err := json.Unmarshal(request, &inner); err != nil {
		return nil, fmt.Errorf("translate: gemini request: %w", err)
	}
	if !isObject(request) {
		return nil, errors.New("translate: gemini request: not an object")
	}
	if ca.UserPromptID == "" {
		ca.UserPromptID = promptID(inner.Contents)
	}
	return marshal(caEnvelope{Model: ca.Model, Project: ca.Project, UserPromptID: ca.UserPromptID, Request: compact(request)}), nil
}

// UnwrapCodeAssist takes the generateContent request out of a Code Assist
// request, ready for the Gemini API: without Code Assist's session_id
// and the Vertex labels, which the Gemini API refuses.
func UnwrapCodeAssist(body []byte) ([]byte, CodeAssist, error) {
	env, err := readEnvelope(body)
	if err != nil {
		return nil, CodeAssist{}, err
	}
	ca := CodeAssist{Model: env.Model, Project: env.Project, UserPromptID: env.UserPromptID}
	var inner map[string]json.RawMessage
	_ = json.Unmarshal(env.Request, &inner)
	delete(inner, "session_id")
	delete(inner, "labels")
	return marshal(inner), ca, nil
}

// readEnvelope reads a Code Assist request whose request is an object.
func readEnvelope(body []byte) (caEnvelope, error) {
	var env caEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		return env, fmt.Errorf("translate: code assist request: %w", err)
	}
	if !isObject(env.Request) {
		return env, errors.New("translate: code assist request: no request object")
	}
	return env, nil
}

// WrapCodeAssistResponse puts a GenerateContentResponse into Code
// Assist's answer envelope, its responseId as the traceId.
func WrapCodeAssistResponse(resp []byte) ([]byte, error) {
	var r struct {
		ResponseID string `json:"responseId"`
	}
	if err := json.Unmarshal(resp, &r); err != nil || !isObject(resp) {
		return nil, fmt.Errorf("translate: gemini answer is not an object: %v", err)
	}
	return object(kv{"response", compact(resp)}, kv{"traceId", r.ResponseID}), nil
}

// UnwrapCodeAssistResponse takes the GenerateContentResponse out of a
// Code Assist answer, with the traceId as its responseId when it has
// none, as Gemini CLI reads it.
func UnwrapCodeAssistResponse(body []byte) ([]byte, error) {
	var env struct {
		Response json.RawMessage `json:"response"`
		TraceID  string          `json:"traceId"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("translate: code assist answer: %w", err)
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal(env.Response, &r); err != nil || r == nil {
		return nil, errors.New("translate: code assist answer without response")
	}
	if _, ok := r["responseId"]; !ok && env.TraceID != "" {
		r["responseId"] = marshal(env.TraceID)
	}
	return marshal(r), nil
}

// promptID derives a user prompt id from the user's own texts (not the
// tool results): stable while a tool loop answers one prompt.
func promptID(contents []gContent) string {
	h := sha256.New()
	for _, c := range contents {
		if c.Role == "model" {
			continue
		}
		for _, p := range c.Parts {
			if p.Text != nil && !p.Thought {
				h.Write([]byte(*p.Text))
				h.Write([]byte{0})
			}
		}
	}
	return "subpool-" + hex.EncodeToString(h.Sum(nil))[:24]
}

func isObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// compact gives valid JSON without its insignificant spaces, so an
// embedded body reads like the rest; its field order stays.
func compact(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}
