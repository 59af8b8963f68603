package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// validGemini reads a translated stream as Gemini CLI does: events split
// at blank lines, each "data: " a GenerateContentResponse (inside
// {"response": …} for Code Assist), the last one carrying the only
// finishReason and the usage; or, at the very end, a Google error object,
// bare for the Gemini API (the @google/genai SDK raises it) and as data
// for Code Assist (whose client reads data lines only). Parts must be
// what the CLI counts as valid: no empty non-thought text, function calls
// with a name, an id and object arguments. It returns the events, a bare
// error as an event with no name.
func validGemini(b []byte, codeAssist bool) ([]sseEvent, error) {
	evs, err := geminiEvents(b, codeAssist)
	if err != nil {
		return nil, err
	}
	id, finished := "", false
	for i, ev := range evs {
		last := i == len(evs)-1
		var top map[string]json.RawMessage
		if err := json.Unmarshal(ev.data, &top); err != nil {
			return nil, fmt.Errorf("event %d is not a JSON object: %v", i, err)
		}
		if raw, isErr := top["error"]; isErr {
			if err := validGeminiError(i, ev, raw, top, last, codeAssist); err != nil {
				return nil, err
			}
			return evs, nil
		}
		if ev.name == "bare" {
			return nil, fmt.Errorf("bare JSON that is not an error: %s", ev.data)
		}
		data := ev.data
		if codeAssist {
			var env struct {
				Response json.RawMessage `json:"response"`
				TraceID  *string         `json:"traceId"`
			}
			if json.Unmarshal(data, &env) != nil || env.TraceID == nil || len(top) != 2 {
				return nil, fmt.Errorf("code assist event %d without response and traceId: %s", i, data)
			}
			data = env.Response
		}
		var r geminiChunk
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("chunk %d: %v", i, err)
		}
		if finished {
			return nil, fmt.Errorf("chunk %d after the finishReason", i)
		}
		if r.ResponseID == "" || id != "" && r.ResponseID != id {
			return nil, fmt.Errorf("chunk %d has responseId %q after %q", i, r.ResponseID, id)
		}
		id = r.ResponseID
		if len(r.Candidates) != 1 || r.Candidates[0].Content == nil || r.Candidates[0].Content.Role != "model" {
			return nil, fmt.Errorf("chunk %d: want one candidate with model content: %s", i, data)
		}
		c := r.Candidates[0]
		for j, p := range c.Content.Parts {
			if err := validGeminiPart(p); err != nil {
				return nil, fmt.Errorf("chunk %d part %d: %v: %s", i, j, err, data)
			}
		}
		if c.FinishReason != "" {
			finished = true
			switch c.FinishReason {
			case "STOP", "MAX_TOKENS", "SAFETY":
			default:
				return nil, fmt.Errorf("finishReason %q", c.FinishReason)
			}
			u := r.UsageMetadata
			if u == nil || u.PromptTokenCount == nil || u.CandidatesTokenCount == nil || u.TotalTokenCount == nil ||
				*u.TotalTokenCount != *u.PromptTokenCount+*u.CandidatesTokenCount {
				return nil, fmt.Errorf("last chunk without sound usage: %s", data)
			}
		} else if len(c.Content.Parts) == 0 {
			return nil, fmt.Errorf("chunk %d carries nothing", i)
		}
	}
	if !finished {
		return nil, fmt.Errorf("stream ends without a finishReason or an error")
	}
	return evs, nil
}

// geminiChunk is what validGemini reads of a GenerateContentResponse.
type geminiChunk struct {
	Candidates []struct {
		Content *struct {
			Role  string           `json:"role"`
			Parts []map[string]any `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount     *int `json:"promptTokenCount"`
		CandidatesTokenCount *int `json:"candidatesTokenCount"`
		TotalTokenCount      *int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
	ResponseID string `json:"responseId"`
}

// geminiEvents splits a stream at blank lines: each event one data line,
// or for the Gemini API a bare JSON error (named "bare").
func geminiEvents(b []byte, codeAssist bool) ([]sseEvent, error) {
	if !bytes.HasSuffix(b, []byte("\n\n")) {
		return nil, fmt.Errorf("stream does not end with a blank line")
	}
	var evs []sseEvent
	for _, block := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		switch {
		case strings.HasPrefix(block, "data: ") && !strings.Contains(block, "\n"):
			evs = append(evs, sseEvent{"", []byte(strings.TrimPrefix(block, "data: "))})
		case !codeAssist && strings.HasPrefix(block, "{"):
			evs = append(evs, sseEvent{"bare", []byte(block)})
		default:
			return nil, fmt.Errorf("event %q is neither one data line nor a bare error", block)
		}
	}
	return evs, nil
}

// validGeminiError checks event i, a Google error object (raw, in top):
// the last event, whole, and in this client's form.
func validGeminiError(i int, ev sseEvent, raw json.RawMessage, top map[string]json.RawMessage, last, codeAssist bool) error {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Code < 400 || e.Message == "" || e.Status == "" || !last || len(top) != 1 {
		return fmt.Errorf("error event %d not last or without code, message and status: %s", i, ev.data)
	}
	if bare := ev.name == "bare"; bare != !codeAssist {
		return fmt.Errorf("error event %d in the wrong form for this client: %s", i, ev.data)
	}
	return nil
}

func validGeminiPart(p map[string]any) error {
	if len(p) == 0 {
		return fmt.Errorf("empty part")
	}
	if fc, ok := p["functionCall"].(map[string]any); ok {
		name, _ := fc["name"].(string)
		id, _ := fc["id"].(string)
		if _, obj := fc["args"].(map[string]any); name == "" || id == "" || !obj {
			return fmt.Errorf("function call without name, id or object args")
		}
		return nil
	}
	s, isText := p["text"].(string)
	thought, _ := p["thought"].(bool)
	if !isText || s == "" && !thought || len(p) > 2 || len(p) == 2 && !thought {
		return fmt.Errorf("want a non-empty text or thought part")
	}
	return nil
}
