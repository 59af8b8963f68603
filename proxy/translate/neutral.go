package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A request crosses wires through one neutral form: each reader turns its
// wire into it (refusing what it cannot hold), each writer turns it into
// its wire. Five readers and writers instead of one converter per pair,
// and the neutral form is where "what a turn means" is decided once.

type request struct {
	system      []string
	turns       []turn
	tools       []tool
	toolChoice  *toolChoice
	noParallel  bool // the client asked for at most one tool call per turn
	maxTokens   *int
	temperature *float64
	topP        *float64
	topK        *int // Anthropic and Gemini sample by it; OpenAI does not
	seed        *int // Chat and Gemini take one; Claude does not
	stop        []string
	stopField   string // where stop came from, for a refusal
	maxField    string // where maxTokens came from, for a note
	stream      bool
	effort      string // OpenAI reasoning effort, "" for none
	budget      int    // Anthropic thinking budget in tokens, 0 for none
	user        string

	// Carried between the two OpenAI wires only: the others have no
	// such setting (verbosity, cache key) or refuse it (format).
	verbosity string
	cacheKey  string
	format    json.RawMessage // structured output in the Responses text.format shape; nil for plain text
}

type turn struct {
	role  string // user or assistant
	parts []part
}

type partKind int

const (
	textPart partKind = iota
	imagePart
	callPart   // assistant: a tool call
	resultPart // user: a tool result
)

type part struct {
	kind partKind
	text string
	img  image
	call toolCall
	res  toolResult
}

// image is either inline data or a URL. detail is OpenAI's resolution
// hint ("low", "high", "auto"), "" when not given.
type image struct {
	mediaType, data string
	url             string
	detail          string
}

type toolCall struct {
	id, name string
	args     string // a JSON object as text
}

type toolResult struct {
	id      string
	name    string // the function answered; Gemini names it, the others only by the call's id
	parts   []part // text and images
	isError bool
}

type tool struct {
	name, description string
	schema            json.RawMessage
	strict            *bool // OpenAI's strict schema adherence, nil when not said
}

type toolChoice struct {
	mode string // auto, any, none, tool
	name string
}

// addTurn appends parts under role, merging into the previous turn when
// the role repeats: Anthropic wants strict alternation, and OpenAI's
// separate tool messages are one user turn there.
func (r *request) addTurn(role string, parts ...part) {
	if len(parts) == 0 {
		return
	}
	if n := len(r.turns); n > 0 && r.turns[n-1].role == role {
		r.turns[n-1].parts = append(r.turns[n-1].parts, parts...)
		return
	}
	r.turns = append(r.turns, turn{role: role, parts: parts})
}

// endsWithAssistant reports a conversation whose last turn is the
// model's. OpenAI answers it with a new message, Claude would continue it
// as a prefill; a tool call left unanswered is refused by Anthropic.
func (r *request) endsWithAssistant() bool {
	return len(r.turns) > 0 && r.turns[len(r.turns)-1].role == "assistant"
}

const endsWithAssistant = "the conversation ends with an assistant turn, which %s would continue instead of answering"

func text(s string) part { return part{kind: textPart, text: s} }

// dataURL splits "data:image/png;base64,AAAA" into media type and data.
func dataURL(u string) (mediaType, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mediaType, enc, _ := strings.Cut(meta, ";")
	if enc != "base64" || mediaType == "" {
		return "", "", false
	}
	return mediaType, data, true
}

func (im image) urlString() string {
	if im.url != "" {
		return im.url
	}
	return "data:" + im.mediaType + ";base64," + im.data
}

// imageFromURL reads an OpenAI image URL, which is either a data URL or
// a web address; ok is false for anything else (a file id, a bare path).
func imageFromURL(u string) (image, bool) {
	if mt, data, ok := dataURL(u); ok {
		return image{mediaType: mt, data: data}, true
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return image{url: u}, true
	}
	return image{}, false
}

// argsObject checks that tool arguments are a JSON object and returns
// them compacted; "" (a call with no arguments, as some servers send it)
// is the empty object. Anthropic's tool_use input must be an object.
func argsObject(args string) (json.RawMessage, bool) {
	args = strings.TrimSpace(args)
	if args == "" {
		return json.RawMessage("{}"), true
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(args)); err != nil || buf.Bytes()[0] != '{' {
		return nil, false
	}
	return buf.Bytes(), true
}

// contentTexts reads the content of field, a message of role, as a string
// or as text parts of the given types; it refuses any other part.
func (c *conv) contentTexts(raw json.RawMessage, field, role string, typ ...string) ([]string, error) {
	texts, bad, badType, err := stringOrTexts(raw, typ...)
	if err != nil {
		return nil, fmt.Errorf("translate: %s.content: %w", field, err)
	}
	if bad >= 0 {
		return nil, c.refuse(path(field+".content", bad), "%s content part type %q", role, badType)
	}
	return texts, nil
}

// stringOrTexts reads a field that holds a string or an array of parts
// of which only the text ones are wanted; typ lists the accepted text
// part types. It reports the index of the first other part.
func stringOrTexts(raw json.RawMessage, typ ...string) (texts []string, bad int, badType string, err error) {
	if isNull(raw) {
		return nil, -1, "", nil
	}
	if isString(raw) {
		var s string
		err = json.Unmarshal(raw, &s)
		return []string{s}, -1, "", err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err = json.Unmarshal(raw, &parts); err != nil {
		return nil, -1, "", err
	}
	for i, p := range parts {
		ok := false
		for _, t := range typ {
			ok = ok || p.Type == t
		}
		if !ok {
			return nil, i, p.Type, nil
		}
		texts = append(texts, p.Text)
	}
	return texts, -1, "", nil
}
