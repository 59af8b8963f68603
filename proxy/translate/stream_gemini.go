package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/subpool/subpool/proxy/sse"
)

// ---- Gemini SSE (alt=sse) ----
//
// Each event is data: {GenerateContentResponse}, with no event names and
// no terminator: the chunk whose candidate has a finishReason is the last
// (it also carries the usage). Function calls come whole, one part each.
// Code Assist wraps every chunk: data: {"response": {…}, "traceId": …}.
// A failure mid-stream comes as a Google error object instead of a chunk:
// as a data event, or as bare JSON lines without data: (what the Gemini
// API sends, and what the @google/genai SDK in Gemini CLI turns into an
// error with its code).

type geminiDecoder struct {
	codeAssist bool
	id         string
	usage      *gUsage
	calls      int
	segment    int // text after a function call is a new text block
}

func (d *geminiDecoder) feed(a *assembler, event string, data []byte) error {
	data = bytes.TrimSpace(data)
	if e, ok := streamError(Gemini, event, data); ok {
		a.fail(e)
		return nil
	}
	var ch gResponse
	if d.codeAssist {
		var env struct {
			Response *gResponse `json:"response"`
			TraceID  string     `json:"traceId"`
		}
		if err := json.Unmarshal(data, &env); err != nil {
			return fmt.Errorf("chunk: %w", err)
		}
		if env.Response == nil {
			return nil // nothing but Code Assist's bookkeeping (credits)
		}
		ch = *env.Response
		if ch.ResponseID == "" {
			ch.ResponseID = env.TraceID
		}
	} else if err := json.Unmarshal(data, &ch); err != nil {
		return fmt.Errorf("chunk: %w", err)
	}
	if d.id == "" && ch.ResponseID != "" {
		d.id = ch.ResponseID
	}
	if ch.UsageMetadata != nil {
		d.usage = ch.UsageMetadata
	}
	// Gemini reports the prompt's size on its first chunk already.
	start := anthropicUsageFromGemini(d.usage)
	start.OutputTokens = 0
	a.start(d.id, start)
	if len(ch.Candidates) == 0 {
		if ch.PromptFeedback != nil && ch.PromptFeedback.BlockReason != "" {
			a.finish("refusal", anthropicUsageFromGemini(d.usage))
		}
		return nil
	}
	cand := ch.Candidates[0]
	if cand.Content != nil {
		for i, p := range cand.Content.Parts {
			if err := d.part(a, i, p); err != nil {
				return err
			}
		}
	}
	if cand.FinishReason == "" {
		return nil
	}
	stop, ok := anthropicStopFromGemini(cand.FinishReason, d.calls > 0)
	if !ok {
		a.fail(upstreamError{anthropicType: "api_error", openaiType: "server_error", googleStatus: "INTERNAL",
			message: "Gemini ended its answer with " + cand.FinishReason})
		return nil
	}
	a.finish(stop, anthropicUsageFromGemini(d.usage))
	return nil
}

func (d *geminiDecoder) part(a *assembler, i int, p gPart) error {
	switch {
	case p.Thought:
		if p.Text != nil {
			a.thought(*p.Text)
		}
	case p.FunctionCall != nil:
		b, err := geminiToolUse(d.id, d.calls, p.FunctionCall)
		if err != nil {
			return err
		}
		key := "call" + strconv.Itoa(d.calls)
		d.calls++
		d.segment++
		if err := a.tool(key, b.ID, b.Name); err != nil {
			return err
		}
		if string(b.Input) != "{}" {
			if err := a.args(key, string(b.Input)); err != nil {
				return err
			}
		}
		a.end(key)
	case p.Text != nil:
		return a.text("text"+strconv.Itoa(d.segment), *p.Text)
	case p.InlineData != nil || p.FileData != nil || p.ExecutableCode != nil || p.CodeExecutionResult != nil || p.FunctionResponse != nil:
		return fmt.Errorf("part %d has no equivalent", i)
	}
	return nil
}

// end does nothing: a Gemini answer is over at its finishReason, so a
// stream without one was cut short.
func (d *geminiDecoder) end(*assembler) {}

// geminiEncoder writes what Gemini CLI reads: a chunk per text delta and
// per thought, a chunk per function call once its arguments are whole,
// then a last chunk with the finishReason and the usage.
type geminiEncoder struct {
	w          *bytes.Buffer
	model      string
	codeAssist bool
	id         string

	inTool   bool
	toolID   string
	toolName string
	args     strings.Builder
	badCall  string // a call whose arguments were not an object, "" for none
}

func (e *geminiEncoder) chunk(parts []gPart, finish string, u *gUsage) {
	if parts == nil {
		parts = []gPart{}
	}
	r := gResponse{Candidates: []gCandidate{{Content: &gContent{Role: "model", Parts: parts}, FinishReason: finish}},
		UsageMetadata: u, ModelVersion: e.model, ResponseID: e.id}
	data := marshal(r)
	if e.codeAssist {
		data = object(kv{"response", json.RawMessage(data)}, kv{"traceId", e.id})
	}
	writeData(e.w, data)
}

func (e *geminiEncoder) start(id string, _ aUsage) { e.id = geminiResponseID(id) }

func (e *geminiEncoder) openText() {}

func (e *geminiEncoder) openRefusal() {}

func (e *geminiEncoder) textDelta(s string) { e.chunk([]gPart{gText(s)}, "", nil) }

func (e *geminiEncoder) thought(s string) { e.chunk([]gPart{{Text: &s, Thought: true}}, "", nil) }

func (e *geminiEncoder) openTool(id, name string) {
	e.inTool, e.toolID, e.toolName = true, id, name
	e.args.Reset()
}

func (e *geminiEncoder) argsDelta(s string) { e.args.WriteString(s) }

// closeBlock sends a function call whole, as Gemini does. Arguments that
// are not an object are held back: if the answer was cut by the token
// limit the call is dropped (the finishReason says why), else finish
// fails the stream.
func (e *geminiEncoder) closeBlock() {
	if !e.inTool {
		return
	}
	e.inTool = false
	args, ok := argsObject(e.args.String())
	if !ok {
		e.badCall = e.toolName
		return
	}
	e.chunk([]gPart{{FunctionCall: &gFunctionCall{ID: e.toolID, Name: e.toolName, Args: args}}}, "", nil)
}

func (e *geminiEncoder) finish(stop string, u aUsage) {
	if e.badCall != "" && stop != "max_tokens" {
		e.fail(upstreamError{anthropicType: "api_error", openaiType: "server_error", googleStatus: "INTERNAL",
			message: fmt.Sprintf("the upstream's tool call %q has arguments that are not a JSON object", e.badCall)})
		return
	}
	e.chunk(nil, geminiFinishReason(stop), geminiUsage(u))
}

func (e *geminiEncoder) fail(u upstreamError) {
	writeGeminiError(e.w, e.codeAssist, geminiErrorJSON(u))
}

// writeGeminiError ends a stream to a Gemini client with an error. To the
// Gemini API's clients it is the bare JSON Google sends, which the
// @google/genai SDK raises as an error with its code (so Gemini CLI
// retries a 429 or 503 as it would Google's); Code Assist's client reads
// data lines only, so there it is one.
func writeGeminiError(b *bytes.Buffer, codeAssist bool, body []byte) {
	if codeAssist {
		writeData(b, body)
		return
	}
	b.Write(body)
	b.WriteString("\n\n")
}

// geminiEnvelope passes an event between the two Gemini targets, putting
// Code Assist's envelope on or taking it off.
func geminiEnvelope(to Target, data []byte) []byte {
	var b bytes.Buffer
	data = bytes.TrimSpace(data)
	if _, isErr := streamError(Gemini, "", data); isErr {
		writeGeminiError(&b, to == GeminiCodeAssist, compact(data))
		return b.Bytes()
	}
	if to == GeminiCodeAssist {
		if wrapped, err := WrapCodeAssistResponse(data); err == nil {
			data = wrapped
		}
	} else if inner, err := UnwrapCodeAssistResponse(data); err == nil {
		data = inner
	}
	writeData(&b, data)
	return b.Bytes()
}

// upstreamEvents reads an upstream stream for Stream and Collect. For a
// Gemini upstream it also delivers a bare JSON error (lines with no
// data: field) as an event's data, so the decoder sees the failure.
type upstreamEvents struct {
	r      *sse.Reader
	gemini bool
	eof    bool
}

func newUpstreamEvents(src io.Reader, from Target) *upstreamEvents {
	g := wire(from) == Gemini
	return &upstreamEvents{r: sse.NewReader(src, 0, g), gemini: g}
}

// next returns the next event; io.EOF at the end, including a stream cut
// inside a line (the decoders judge whether the answer was complete).
func (u *upstreamEvents) next() (string, []byte, error) {
	for !u.eof {
		ev, err := u.r.Next()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			u.eof = true
		} else if err != nil {
			return "", nil, err
		}
		if err == nil && (!u.gemini || len(ev.Data) > 0 || ev.Name != "") {
			return ev.Name, ev.Data, nil
		}
		if raw := bytes.TrimSpace(ev.Raw); u.gemini && len(raw) > 0 && (raw[0] == '{' || raw[0] == '[') {
			return "", raw, nil
		}
	}
	return "", nil, io.EOF
}
