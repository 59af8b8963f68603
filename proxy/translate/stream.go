package translate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// A stream crosses wires like a request does, through one neutral form:
// a decoder reads the upstream's events and drives an assembler, which
// keeps the block structure sound (one block open at a time, no empty
// text blocks, nothing after the end); the assembler drives an encoder
// that writes the client's events. Nothing waits for later events: each
// upstream event yields its client events at once.

// encoder writes one client wire. The assembler calls it in a valid
// order: start, then blocks (openText or openRefusal, textDelta…
// closeBlock, or openTool argsDelta… closeBlock), then finish; or fail at
// any point, even before
// start. thought may come between blocks or inside a text block: the
// model's reasoning as text, which only a Gemini client is shown (the
// others would need a signature or summary the upstream did not give).
type encoder interface {
	start(id string, u aUsage)
	openText()
	// openRefusal opens a text block that is an OpenAI model's refusal;
	// the wires without refusals write it as text.
	openRefusal()
	textDelta(s string)
	thought(s string)
	openTool(id, name string)
	argsDelta(s string)
	closeBlock()
	finish(stop string, u aUsage)
	fail(e upstreamError)
}

// decoder reads one upstream wire into the assembler. end runs when the
// upstream stops without its terminator; it finishes the answer if the
// upstream had already said how it ends (a finish reason), and does
// nothing otherwise.
type decoder interface {
	feed(a *assembler, event string, data []byte) error
	end(a *assembler)
}

// StreamTranslator translates one SSE stream, event by event. Feed each
// upstream event as it arrives and write what it returns; when the
// upstream ends, write what Close returns. The zero value is not usable;
// use NewStreamTranslator.
type StreamTranslator struct {
	from, to Target
	dec      decoder
	a        *assembler
	out      bytes.Buffer
	envelope bool // Gemini to Code Assist or back: events pass with the envelope changed
}

// NewStreamTranslator returns a translator of an upstream stream of wire
// from into client events of wire to, naming clientModel as the model.
// Equal wires pass events through unchanged (between Gemini and
// GeminiCodeAssist, with the envelope put on or taken off); for a pair
// Supported refuses, Feed fails.
func NewStreamTranslator(from, to Target, clientModel string) *StreamTranslator {
	return NewStreamTranslatorWithOptions(from, to, clientModel, AnswerOptions{})
}

// NewStreamTranslatorWithOptions is NewStreamTranslator for a client
// whose request asked for more of its answer (ClientAnswerOptions).
func NewStreamTranslatorWithOptions(from, to Target, clientModel string, o AnswerOptions) *StreamTranslator {
	t := &StreamTranslator{from: wire(from), to: wire(to)}
	if !Supported(from, to) {
		return t
	}
	if t.from == t.to {
		if t.from == Gemini && from != to {
			t.envelope, t.to = true, to
		}
		return t
	}
	var enc encoder
	switch t.to {
	case Anthropic:
		enc = &anthropicEncoder{w: &t.out, model: clientModel}
	case OpenAIChat:
		enc = &chatEncoder{w: &t.out, model: clientModel, includeUsage: o.IncludeUsage}
	case Gemini:
		enc = &geminiEncoder{w: &t.out, model: clientModel, codeAssist: to == GeminiCodeAssist}
	default:
		enc = &responsesEncoder{w: &t.out, model: clientModel, names: o.names}
	}
	t.dec = newDecoder(from)
	t.a = newAssembler(enc)
	return t
}

// newDecoder reads an upstream of target from (not yet reduced to its
// wire: Code Assist's envelope is the decoder's to take off).
func newDecoder(from Target) decoder {
	switch wire(from) {
	case Anthropic:
		return &anthropicDecoder{}
	case OpenAIChat:
		return &chatDecoder{}
	case Gemini:
		return &geminiDecoder{codeAssist: from == GeminiCodeAssist}
	}
	return &responsesDecoder{}
}

// Feed translates one upstream event (its event name, "" when it has
// none, and its data without the "data: " prefix) into zero or more
// client SSE events, ready to write. An error means the upstream sent
// something that cannot be translated; the stream cannot go on, and
// Close gives the client's error event to end it with. The events
// returned with an error (what the upstream event yielded before it
// failed) are to be written too, before Close's.
//
// A Gemini upstream that fails mid-stream may send a bare JSON error
// object, lines without "data:" that an SSE reader skips; feed those
// bytes as data with no event name (Stream and Collect do) so the
// client hears of the failure rather than of a cut stream.
func (t *StreamTranslator) Feed(event string, data []byte) ([]byte, error) {
	if t.dec == nil {
		if !Supported(t.from, t.to) {
			return nil, fmt.Errorf("translate: no translation from %q to %q", t.from, t.to)
		}
		if t.envelope {
			return geminiEnvelope(t.to, data), nil
		}
		return passThrough(t.to, event, data), nil
	}
	if t.a.over() || t.a.broken != nil {
		return nil, nil
	}
	t.out.Reset()
	if err := t.dec.feed(t.a, event, data); err != nil {
		// What the event wrote before it failed goes out: the encoder
		// counted it (a Responses sequence number, an open block), and
		// the error Close writes must follow it.
		t.a.broken = err
		return t.take(), fmt.Errorf("translate: %s stream: %w", t.from, err)
	}
	return t.take(), nil
}

// take hands out what the encoder wrote for this call; the buffer is
// reused for the next.
func (t *StreamTranslator) take() []byte {
	if t.out.Len() == 0 {
		return nil
	}
	return bytes.Clone(t.out.Bytes())
}

// Close ends the translation when the upstream stream has ended. If the
// upstream said how its answer ends but not that it is over (no
// [DONE], no message_stop), Close writes the client's closing events. If
// the answer was cut short, or Feed failed, Close writes the client
// wire's error event: a cut answer must not look complete. After a
// complete stream it returns nothing.
func (t *StreamTranslator) Close() []byte {
	if t.dec == nil || t.a.over() {
		return nil
	}
	t.out.Reset()
	if t.a.broken == nil {
		t.dec.end(t.a)
	}
	if !t.a.over() {
		msg := "the upstream stream ended before the answer was complete"
		if t.a.broken != nil {
			msg = "the upstream stream could not be translated: " + t.a.broken.Error()
		}
		t.a.fail(upstreamError{anthropicType: "api_error", openaiType: "server_error", message: msg})
	}
	return t.take()
}

func passThrough(to Target, event string, data []byte) []byte {
	var b bytes.Buffer
	if to == Gemini {
		if _, isErr := streamError(Gemini, event, data); isErr {
			writeGeminiError(&b, false, compact(data))
			return b.Bytes()
		}
	}
	if to == OpenAIChat || event == "" {
		writeData(&b, data)
	} else {
		writeEvent(&b, event, data)
	}
	return b.Bytes()
}

// Stream translates the SSE stream src into w: one Write per upstream
// event that yields client events, so a writer that flushes on Write
// delivers each at once. It returns when src ends: nil when it ended
// cleanly (whatever the answer said), else the read, write or
// translation error that stopped it, after writing the closing events
// Close gives.
func Stream(w io.Writer, src io.Reader, from, to Target, clientModel string) error {
	t := NewStreamTranslator(from, to, clientModel)
	r := newUpstreamEvents(src, from)
	var stop error
	for stop == nil {
		event, data, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			stop = err
			break
		}
		out, err := t.Feed(event, data)
		if len(out) > 0 {
			if _, werr := w.Write(out); werr != nil {
				return werr
			}
		}
		stop = err
	}
	if out := t.Close(); len(out) > 0 {
		if _, err := w.Write(out); err != nil && stop == nil {
			stop = err
		}
	}
	return stop
}

// assembler keeps the neutral block structure sound whatever order the
// upstream's events come in, keyed by the decoder's own block keys.
type assembler struct {
	enc     encoder
	started bool
	open    string // key of the open block, "" when none
	closed  map[string]bool
	done    bool  // finish or fail was written
	broken  error // Feed failed
}

func newAssembler(enc encoder) *assembler {
	return &assembler{enc: enc, closed: map[string]bool{}}
}

func (a *assembler) over() bool { return a.done }

func (a *assembler) start(id string, u aUsage) {
	if !a.started {
		if id == "" {
			id = "translated" // an upstream that names no id
		}
		a.started = true
		a.enc.start(id, u)
	}
}

// ensureStarted covers upstreams whose first content arrives before
// their start event (or that have none).
func (a *assembler) ensureStarted() { a.start("", aUsage{}) }

// thought passes the model's reasoning on, outside the block structure.
func (a *assembler) thought(s string) {
	if s == "" || a.done {
		return
	}
	a.ensureStarted()
	a.enc.thought(s)
}

// text appends to the text block key, opening it on the first non-empty
// delta: Anthropic refuses empty text blocks when a client sends the
// turn back.
func (a *assembler) text(key, s string) error { return a.textOf(key, s, a.enc.openText) }

// refusal is text that is the model's refusal.
func (a *assembler) refusal(key, s string) error { return a.textOf(key, s, a.enc.openRefusal) }

func (a *assembler) textOf(key, s string, open func()) error {
	if s == "" {
		return nil
	}
	a.ensureStarted()
	if a.open != key {
		if a.closed[key] {
			return fmt.Errorf("text for block %s after it ended", key)
		}
		a.closeBlock()
		a.open = key
		open()
	}
	a.enc.textDelta(s)
	return nil
}

func (a *assembler) tool(key, id, name string) error {
	if id == "" || name == "" {
		// Every client needs both to run the call and answer it.
		return fmt.Errorf("tool call %s without an id or a name", key)
	}
	a.ensureStarted()
	if a.open == key || a.closed[key] {
		return fmt.Errorf("tool call %s started twice", key)
	}
	a.closeBlock()
	a.open = key
	a.enc.openTool(id, name)
	return nil
}

func (a *assembler) args(key, s string) error {
	if s == "" {
		return nil
	}
	if a.open != key {
		// Anthropic blocks cannot interleave; an upstream that goes back
		// to an earlier tool call cannot be carried.
		return fmt.Errorf("arguments for tool call %s outside its block", key)
	}
	a.enc.argsDelta(s)
	return nil
}

// end closes the block key if it is the open one.
func (a *assembler) end(key string) {
	if a.open == key {
		a.closeBlock()
	}
}

func (a *assembler) closeBlock() {
	if a.open != "" {
		a.closed[a.open] = true
		a.open = ""
		a.enc.closeBlock()
	}
}

func (a *assembler) finish(stop string, u aUsage) {
	if a.done {
		return
	}
	a.ensureStarted()
	a.closeBlock()
	a.done = true
	a.enc.finish(stop, u)
}

func (a *assembler) fail(e upstreamError) {
	if a.done {
		return
	}
	a.done = true
	a.enc.fail(e)
}
