package translate

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// StreamError is an error the upstream reported inside a stream that
// Collect was reading. Body is that error in the client wire's error
// shape, ready to send with a status of the caller's choosing.
type StreamError struct {
	Message string
	Body    []byte
}

func (e *StreamError) Error() string { return "translate: upstream stream failed: " + e.Message }

// Collect reads a whole upstream SSE stream of wire from and returns the
// complete JSON answer of wire to, for a client that asked for JSON from
// an upstream that only streams (ChatGPTCodex). It fails with a
// *StreamError when the upstream reported an error in the stream, and
// with a plain error when the stream was cut short or cannot be read.
// Like every translated answer, it keeps text and tool calls, not
// reasoning.
func Collect(from, to Target, src io.Reader, clientModel string) ([]byte, error) {
	return collect(&conv{from: Anthropic, to: to}, from, src, clientModel)
}

// collect is Collect writing its answer with ans, a conversion from the
// Anthropic form to the client's wire.
func collect(ans *conv, from Target, src io.Reader, clientModel string) ([]byte, error) {
	to := ans.to
	if !Supported(from, to) {
		return nil, fmt.Errorf("translate: no translation from %q to %q", from, to)
	}
	col := &collector{msg: aResponse{Type: "message", Role: "assistant", Model: clientModel, Content: []aBlock{}},
		keepThoughts: wire(to) == Gemini}
	a := newAssembler(col)
	dec := newDecoder(from)
	r := newUpstreamEvents(src, from)
	for !a.over() {
		event, data, err := r.next()
		if errors.Is(err, io.EOF) {
			dec.end(a)
			break
		}
		if err != nil {
			return nil, err
		}
		if err := dec.feed(a, event, data); err != nil {
			return nil, fmt.Errorf("translate: %s stream: %w", from, err)
		}
	}
	switch {
	case col.failed != nil:
		return nil, &StreamError{Message: col.failed.message, Body: errorJSON(to, *col.failed)}
	case !a.over():
		return nil, errors.New("translate: the upstream stream ended before the answer was complete")
	case col.err != nil:
		return nil, col.err
	}
	return ans.answer(&col.msg, to, clientModel)
}

func errorJSON(to Target, e upstreamError) []byte {
	switch wire(to) {
	case Anthropic:
		return anthropicErrorJSON(e)
	case Gemini:
		return geminiErrorJSON(e)
	}
	return openaiErrorJSON(e)
}

// collector is the encoder that builds an Anthropic message instead of
// writing events; Collect converts it to the client's wire.
type collector struct {
	msg    aResponse
	args   []*strings.Builder // per content block; nil for text
	failed *upstreamError
	err    error

	// keepThoughts collects the model's reasoning as a thinking block,
	// for a Gemini client, the one wire that shows it without a
	// signature; thoughts holds it until the end, since it may come
	// inside a text block.
	keepThoughts bool
	thoughts     strings.Builder
}

func (c *collector) start(id string, u aUsage) {
	c.msg.ID, c.msg.Usage = anthropicIDFromOpenAI(id), u
}

func (c *collector) openText() {
	c.msg.Content = append(c.msg.Content, aBlock{Type: "text"})
	c.args = append(c.args, nil)
}

func (c *collector) openRefusal() {
	c.msg.Content = append(c.msg.Content, aBlock{Type: "text", refusal: true})
	c.args = append(c.args, nil)
}

func (c *collector) textDelta(s string) { c.msg.Content[len(c.msg.Content)-1].Text += s }

func (c *collector) thought(s string) {
	if c.keepThoughts {
		c.thoughts.WriteString(s)
	}
}

func (c *collector) openTool(id, name string) {
	c.msg.Content = append(c.msg.Content, aBlock{Type: "tool_use", ID: id, Name: name})
	c.args = append(c.args, &strings.Builder{})
}

func (c *collector) argsDelta(s string) { c.args[len(c.args)-1].WriteString(s) }

func (c *collector) closeBlock() {}

// finish parses each call's arguments now that the stop reason says
// whether a cut was expected (see toolUse).
func (c *collector) finish(stop string, u aUsage) {
	c.msg.StopReason, c.msg.Usage = &stop, u
	kept := c.msg.Content[:0]
	for i, b := range c.msg.Content {
		if c.args[i] != nil {
			input, ok := argsObject(c.args[i].String())
			if !ok {
				if stop != "max_tokens" {
					c.err = fmt.Errorf("translate: upstream tool call %q: arguments are not a JSON object: %.80q", b.Name, c.args[i].String())
				}
				continue
			}
			b.Input = input
		}
		kept = append(kept, b)
	}
	c.msg.Content = kept
	if c.thoughts.Len() > 0 {
		c.msg.Content = append([]aBlock{{Type: "thinking", Thinking: c.thoughts.String()}}, c.msg.Content...)
	}
}

func (c *collector) fail(e upstreamError) { c.failed = &e }
