package translate

import (
	"bytes"
	"encoding/json"
	"io"
)

// AnswerOptions is what a client's request asks of the shape of its
// answer beyond its wire. Read it with ClientAnswerOptions; the zero value
// asks for nothing.
type AnswerOptions struct {
	// IncludeUsage is a Chat Completions client's
	// stream_options.include_usage: the usage then comes in a chunk of
	// its own after the finishing one, with no choices, as OpenAI sends
	// it. Without it the usage rides on the finishing chunk, which every
	// client reads and none trips on.
	IncludeUsage bool

	// names maps the flat name a namespaced tool of a Responses client
	// was offered under (see nsName) back to its namespace and name, for
	// the calls of the answer.
	names map[string]nsTool
}

// nsTool is a function tool inside a Responses "namespace" tool.
type nsTool struct{ namespace, name string }

// nsName is the one name a namespaced tool is offered under on a wire
// without namespaces: Codex CLI groups tools (its sub-agents') in a
// "namespace" tool, and names a call by namespace and name.
func nsName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "__" + name
}

// ClientAnswerOptions reads the AnswerOptions of a client's request of
// wire client; a body it cannot read asks for nothing.
func ClientAnswerOptions(client Target, body []byte) AnswerOptions {
	var o AnswerOptions
	switch wire(client) {
	case OpenAIChat:
		var in struct {
			StreamOptions *cStreamOptions `json:"stream_options"`
		}
		if json.Unmarshal(body, &in) == nil && in.StreamOptions != nil {
			o.IncludeUsage = in.StreamOptions.IncludeUsage
		}
	case OpenAIResponses:
		if !bytes.Contains(body, []byte(`"namespace"`)) {
			return o
		}
		var in struct {
			Tools []struct {
				Type  string  `json:"type"`
				Name  string  `json:"name"`
				Tools []rTool `json:"tools"`
			} `json:"tools"`
		}
		_ = json.Unmarshal(body, &in)
		for _, t := range in.Tools {
			for _, f := range t.Tools {
				if t.Type == "namespace" {
					if o.names == nil {
						o.names = map[string]nsTool{}
					}
					o.names[nsName(t.Name, f.Name)] = nsTool{t.Name, f.Name}
				}
			}
		}
	}
	return o
}

// ResponseWithOptions is Response for a client whose request asked for
// more of its answer.
func ResponseWithOptions(from, to Target, body []byte, clientModel string, o AnswerOptions) ([]byte, error) {
	return response(&conv{from: from, to: to, names: o.names}, body, clientModel)
}

// CollectWithOptions is Collect for a client whose request asked for more
// of its answer.
func CollectWithOptions(from, to Target, src io.Reader, clientModel string, o AnswerOptions) ([]byte, error) {
	return collect(&conv{from: Anthropic, to: to, names: o.names}, from, src, clientModel)
}

// functionItem is a Responses function_call item, named as the client
// offered the tool: a namespaced tool by its namespace and name.
func functionItemFor(names map[string]nsTool, callID, name, args, status string) rItem {
	it := functionItem(callID, name, args, status)
	if ref, ok := names[name]; ok {
		it.Name, it.Namespace = ref.name, ref.namespace
	}
	return it
}
