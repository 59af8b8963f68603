package translate

import (
	"encoding/json"
	"fmt"
)

// What crosses between the two OpenAI wires and no other: structured
// output (Chat's response_format, Responses' text.format), verbosity and
// image detail. Claude and Gemini have no faithful equivalent, so their
// readers refuse structured output and drop the rest (fields.go).

// chatFormat reads response_format. Plain text is no format; a JSON
// format is carried to Responses in its text.format shape and refused
// for every other wire.
func (c *conv) chatFormat(raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Schema      json.RawMessage `json:"schema,omitempty"`
			Strict      *bool           `json:"strict,omitempty"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, fmt.Errorf("translate: response_format: %w", err)
	}
	switch {
	case rf.Type == "text" || rf.Type == "":
		return nil, nil
	case wire(c.to) != OpenAIResponses || (rf.Type != "json_object" && rf.Type != "json_schema"):
		return nil, c.refuse("response_format", "type %q (structured output) is not translated", rf.Type)
	case rf.Type == "json_object":
		return json.RawMessage(`{"type":"json_object"}`), nil
	case rf.JSONSchema == nil:
		return nil, fmt.Errorf("translate: response_format: json_schema without its json_schema object")
	}
	s := rf.JSONSchema
	return marshal(rFormat{Type: "json_schema", Name: s.Name, Description: s.Description, Schema: s.Schema, Strict: s.Strict}), nil
}

// rFormat is text.format of type json_schema: Chat's json_schema object,
// flattened.
type rFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// chatResponseFormat writes a carried format as response_format.
func chatResponseFormat(format json.RawMessage) json.RawMessage {
	if format == nil {
		return nil
	}
	var f rFormat
	_ = json.Unmarshal(format, &f) // our own, or checked by responsesText
	if f.Type != "json_schema" {
		return marshal(map[string]string{"type": f.Type})
	}
	type cJSONSchema struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Schema      json.RawMessage `json:"schema,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	}
	return marshal(struct {
		Type       string      `json:"type"`
		JSONSchema cJSONSchema `json:"json_schema"`
	}{"json_schema", cJSONSchema{f.Name, f.Description, f.Schema, f.Strict}})
}

// responsesText reads text: its format (carried to Chat only, refused
// elsewhere) and verbosity (carried to Chat only, dropped elsewhere).
func (c *conv) responsesText(r *request, t *rText) error {
	if t == nil {
		return nil
	}
	toChat := wire(c.to) == OpenAIChat
	if !isNull(t.Format) {
		var f rFormat
		if err := json.Unmarshal(t.Format, &f); err != nil {
			return fmt.Errorf("translate: text.format: %w", err)
		}
		switch {
		case f.Type == "text" || f.Type == "":
		case toChat && (f.Type == "json_object" || f.Type == "json_schema"):
			r.format = t.Format
		default:
			return c.refuse("text.format", "type %q (structured output) is not translated", f.Type)
		}
	}
	if t.Verbosity != "" {
		if toChat {
			r.verbosity = t.Verbosity
		} else {
			c.note("text.verbosity", "dropped: %s has no verbosity setting", name(c.to))
		}
	}
	return nil
}

// responsesTextOut is text for a Responses request: the format, and the
// verbosity where the model takes one (the reasoning models; others
// answer 400).
func (c *conv) responsesTextOut(r *request, model string, reasoning bool) *rText {
	t := rText{Format: r.format}
	if r.verbosity != "" {
		if reasoning {
			t.Verbosity = r.verbosity
		} else {
			c.note("verbosity", "dropped: %s takes no verbosity", model)
		}
	}
	if t.Format == nil && t.Verbosity == "" {
		return nil
	}
	return &t
}

// responsesDetail is an input_image's detail: the client's, else "auto",
// which the Responses API requires.
func (im image) responsesDetail() string {
	if im.detail != "" {
		return im.detail
	}
	return "auto"
}
