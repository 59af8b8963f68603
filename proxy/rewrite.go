package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/subpool/subpool/proxy/jsonscan"
	"github.com/subpool/subpool/proxy/sse"
	"github.com/subpool/subpool/proxy/translate"
)

// The rewriting writer stands between a run and the client when the
// answer the run writes is not what the client gets as it is: an alias's
// model named in it (renamer), another provider's wire (translator), or
// both, a translator writing into a renamer. The run writes to it as to
// its own client. The step, chosen by the answer's status line and
// headers, says whether the bytes pass, are rewritten as they stream, or
// are held and rewritten when the run is over.

// Modes of a rewriter, fixed by the answer's status line.
const (
	modeNone   = iota
	modePass   // bytes go through
	modeHold   // the whole body, rewritten at finish
	modeStream // an SSE stream, rewritten as it arrives
)

// step is what a rewriter does to one answer.
type step interface {
	// open picks the mode for an answer of status with the run's headers
	// h, and readies h for the client.
	open(status int, h http.Header) int
	// stream rewrites the complete part of b, a stream's bytes so far, and
	// says how much of b it used; final: b is all there is, and what
	// closes the stream comes with it.
	stream(b []byte, final bool) (out []byte, used int)
	// held rewrites a held answer once the run is over; abort: it was cut
	// midway. It may change h, which goes to the client after it.
	held(status int, h http.Header, body []byte, abort bool) (int, []byte)
}

// rewriter is the one rewriting writer; its step is pluggable.
type rewriter struct {
	w    http.ResponseWriter
	h    http.Header // what the run sets; the client's once committed
	step step
	// maxHold bounds a held answer; past it the rest passes unchanged.
	// 0: no bound.
	maxHold int
	// onCommit runs once, when the answer's headers go to the client.
	onCommit func(http.Header)

	mode      int
	status    int
	buf       bytes.Buffer
	committed bool
	done      bool
}

func newRewriter(w http.ResponseWriter, s step) *rewriter {
	return &rewriter{w: w, h: http.Header{}, step: s}
}

func (rw *rewriter) Header() http.Header { return rw.h }

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (rw *rewriter) Unwrap() http.ResponseWriter { return rw.w }

func (rw *rewriter) WriteHeader(code int) {
	if rw.mode != modeNone {
		return
	}
	rw.status = code
	rw.mode = rw.step.open(code, rw.h)
	if rw.mode == modePass || rw.mode == modeStream {
		rw.commit()
		rw.w.WriteHeader(code)
	}
}

func (rw *rewriter) Write(b []byte) (int, error) {
	if rw.mode == modeNone {
		rw.WriteHeader(http.StatusOK)
	}
	switch rw.mode {
	case modeStream:
		rw.buf.Write(b)
		if err := rw.flushStream(false); err != nil {
			return 0, err
		}
		return len(b), nil
	case modeHold:
		rw.buf.Write(b)
		if rw.maxHold > 0 && rw.buf.Len() > rw.maxHold {
			// Too large to hold: the rest goes through unchanged, with
			// the upstream's own length, which still holds.
			rw.mode = modePass
			rw.commit()
			rw.w.WriteHeader(rw.status)
			if _, err := rw.w.Write(rw.buf.Bytes()); err != nil {
				return 0, err
			}
			rw.buf.Reset()
		}
		return len(b), nil
	}
	return rw.w.Write(b)
}

// Flush is what http.ResponseController finds: the run flushes after
// every read of a stream.
func (rw *rewriter) Flush() {
	if rw.mode == modePass || rw.mode == modeStream {
		http.NewResponseController(rw.w).Flush()
	}
}

// commit copies the answer's headers to the client's response.
func (rw *rewriter) commit() {
	h := rw.w.Header()
	for k, vs := range rw.h {
		h[k] = vs
	}
	rw.h = h
	rw.committed = true
	if rw.onCommit != nil {
		rw.onCommit(h)
	}
}

func (rw *rewriter) flushStream(final bool) error {
	out, n := rw.step.stream(rw.buf.Bytes(), final)
	rw.buf.Next(n)
	if len(out) == 0 {
		return nil
	}
	_, err := rw.w.Write(out)
	return err
}

// finish writes what was held back once the run is over. abort: the
// answer was cut midway and the connection is about to be cut; a held
// one goes out with no length that would make it look whole.
func (rw *rewriter) finish(abort bool) {
	if rw.done {
		return
	}
	rw.done = true
	switch rw.mode {
	case modeStream:
		if rw.flushStream(true) == nil {
			http.NewResponseController(rw.w).Flush()
		}
	case modeHold:
		status, body := rw.step.held(rw.status, rw.h, rw.buf.Bytes(), abort)
		rw.commit()
		if abort {
			rw.h.Del("Content-Length")
		} else {
			rw.h.Set("Content-Length", strconv.Itoa(len(body)))
		}
		rw.w.WriteHeader(status)
		rw.w.Write(body)
	}
}

// maxRewrite bounds the JSON answer held back to rename its model; a
// larger one (none is, in practice) goes through as the upstream sent it.
const maxRewrite = 8 << 20

// renamer names an alias wherever a successful answer names its model: a
// stream line by line, a JSON answer whole (its length changes).
type renamer struct{ alias string }

func (rm renamer) open(status int, h http.Header) int {
	switch {
	case status < 200 || status > 299:
		return modePass
	case isEventStream(h):
		h.Del("Content-Length")
		return modeStream
	case bytes.Contains([]byte(h.Get("Content-Type")), []byte("json")):
		return modeHold
	}
	return modePass
}

func (rm renamer) stream(b []byte, final bool) ([]byte, int) {
	n := bytes.LastIndexByte(b, '\n') + 1
	if final {
		n = len(b)
	}
	if n == 0 {
		return nil, 0
	}
	var out []byte
	for rest := b[:n]; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		if !bytes.HasPrefix(line, []byte("data:")) {
			out = append(out, line...)
			continue
		}
		body := bytes.TrimRight(line, "\r\n")
		out = append(out, jsonscan.RenameModel(body, rm.alias)...)
		out = append(out, line[len(body):]...)
	}
	return out, n
}

func (rm renamer) held(status int, _ http.Header, body []byte, abort bool) (int, []byte) {
	if abort {
		return status, body
	}
	return status, jsonscan.RenameModel(body, rm.alias)
}

// translator turns a fallback target's answers into the client's wire. A
// refusal is held, so that one from an exhausted target never reaches the
// client and the request can go on without it; so is a JSON answer,
// translated whole.
type translator struct {
	d          *detour
	clientWire Wire // the client's provider wire, for an answer that cannot be translated
	st         *translate.StreamTranslator
}

func (tr *translator) open(status int, h http.Header) int {
	d := tr.d
	switch {
	case status < 200 || status > 299:
		return modeHold
	case !d.stream && isEventStream(h):
		return modeHold // an upstream that only streams (the Codex backend), collected at finish
	case sameWire(d.client, d.up):
		return modePass
	case isEventStream(h):
		tr.st = translate.NewStreamTranslatorWithOptions(d.up, d.client, d.clientModel, translate.ClientAnswerOptions(d.client, d.src))
		h.Del("Content-Length")
		h.Set("Content-Type", "text/event-stream")
		return modeStream
	}
	return modeHold
}

func (tr *translator) stream(b []byte, final bool) ([]byte, int) {
	n := len(b)
	if !final {
		n = eventsEnd(b)
	}
	r := sse.NewReader(bytes.NewReader(b[:n]), 0, true)
	var out []byte
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		data := ev.Data
		if len(data) == 0 && ev.Name == "" {
			// The Gemini API reports a failure mid-stream as bare JSON,
			// outside any data field.
			raw := bytes.TrimSpace(ev.Raw)
			if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
				continue
			}
			data = raw
		}
		o, err := tr.st.Feed(ev.Name, data)
		out = append(out, o...)
		if err != nil {
			// The translator is broken now; Close writes the error event.
			tr.d.logf("fallback to %s/%s: %v", tr.d.to.Name, tr.d.model, err)
		}
	}
	if final {
		out = append(out, tr.st.Close()...)
	}
	return out, n
}

func (tr *translator) held(status int, h http.Header, body []byte, _ bool) (int, []byte) {
	d := tr.d
	up := d.up
	if up == "" {
		// subpool refused before any attempt: its error is in the target
		// provider's shape.
		switch d.to.wire() {
		case WireAnthropic:
			up = translate.Anthropic
		case WireGemini:
			up = translate.Gemini
		default:
			up = translate.OpenAIChat
		}
	}
	var out []byte
	var err error
	switch {
	case status < 200 || status > 299:
		out = body
		if !sameWire(d.client, up) {
			out = translate.ErrorBody(up, d.client, status, body)
		}
	case isEventStream(h):
		// The client asked for JSON from an upstream that only streams
		// (the Codex backend).
		out, err = translate.CollectWithOptions(up, d.client, bytes.NewReader(body), d.clientModel, translate.ClientAnswerOptions(d.client, d.src))
		var se *translate.StreamError
		if errors.As(err, &se) {
			status, out, err = http.StatusBadGateway, se.Body, nil
		}
	case sameWire(d.client, up):
		out = body
	default:
		out, err = translate.ResponseWithOptions(up, d.client, body, d.clientModel, translate.ClientAnswerOptions(d.client, d.src))
	}
	if err != nil {
		status = http.StatusBadGateway
		out = errorBody(tr.clientWire, status, fmt.Sprintf("the answer of %s/%s could not be translated: %v", d.to.Name, d.model, err))
	}
	if !sameWire(d.client, up) || isEventStream(h) {
		h.Del("Content-Length")
	}
	h.Set("Content-Type", "application/json")
	return status, out
}

// eventsEnd is the length of b's complete events: up to the last blank
// line.
func eventsEnd(b []byte) int {
	end, start := 0, 0
	for {
		i := bytes.IndexByte(b[start:], '\n')
		if i < 0 {
			return end
		}
		if len(bytes.TrimRight(b[start:start+i], "\r")) == 0 {
			end = start + i + 1
		}
		start += i + 1
	}
}
