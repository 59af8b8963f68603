package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// stream writes one SSE answer, flushing every event, and plays the
// step's CutAfter. A client that leaves unwinds the handler (see gone),
// so the answer builders need no error paths.
type stream struct {
	x      *exchange
	rc     *http.ResponseController
	bare   bool // Chat Completions, Google: "data:" lines with no "event:" line
	crlf   bool // Google ends each event with CRLF CRLF
	index  int
	deltas int
	buf    []byte
}

// startStream sends the 200 headers of an SSE answer at once, as real
// upstreams do before their first event.
func (x *exchange) startStream(bare bool) *stream {
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	x.applyStepHeaders()
	x.w.WriteHeader(http.StatusOK)
	st := &stream{x: x, rc: http.NewResponseController(x.w), bare: bare}
	if err := st.rc.Flush(); err != nil {
		x.gone()
	}
	return st
}

// send writes one event. v is marshalled unless it is already []byte.
// delta marks a content delta, the unit CutAfter counts.
func (st *stream) send(name string, v any, delta bool) {
	x := st.x
	if delta && x.step.CutAfter < 0 {
		x.abort()
	}
	if delta && x.step.StreamError != "" && (x.step.ErrorAfter < 0 || st.deltas == x.step.ErrorAfter) {
		st.failNow()
	}
	if st.index > 0 && !sleep(x.ctx, x.s.opts.ChunkInterval) {
		x.gone()
	}
	if hook := x.s.opts.BeforeEvent; hook != nil {
		ev := Event{Credential: x.cred, Path: x.r.URL.Path, Index: st.index, Name: name}
		if err := hook(x.ctx, ev); err != nil {
			if x.ctx.Err() != nil {
				x.gone()
			}
			x.abort()
		}
	}
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			panic(err) // only the sim's own values get here
		}
	}
	b := st.buf[:0]
	if !st.bare {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	if x.s.opts.Stamp && len(data) > 2 && data[len(data)-1] == '}' {
		b = append(b, data[:len(data)-1]...)
		b = append(b, `,"sim_emit_unix_nano":`...)
		b = strconv.AppendInt(b, time.Now().UnixNano(), 10)
		b = append(b, '}')
	} else {
		b = append(b, data...)
	}
	if st.crlf {
		b = append(b, "\r\n\r\n"...)
	} else {
		b = append(b, "\n\n"...)
	}
	st.buf = b
	if _, err := x.w.Write(b); err != nil {
		x.gone()
	}
	if err := st.rc.Flush(); err != nil {
		x.gone()
	}
	st.index++
	if delta {
		st.deltas++
		if x.step.CutAfter > 0 && st.deltas == x.step.CutAfter {
			x.abort()
		}
	}
}

// deltasDone closes the delta phase: a CutAfter that did not fire yet
// (fewer deltas than asked) cuts here, before the closing events.
func (st *stream) deltasDone() {
	if st.x.step.CutAfter != 0 {
		st.x.abort()
	}
	if st.x.step.StreamError != "" && st.x.step.ErrorAfter != 0 {
		st.failNow()
	}
}

// failNow sends the step's StreamError in the middle of a stream, then
// ends the stream cleanly.
func (st *stream) failNow() {
	st.sendError()
	st.end()
	panic(errStreamEnded)
}

// end marks the answer complete.
func (st *stream) end() { st.x.done = true }

// streamError plays Step.StreamError: one event carrying the scripted
// data, then a clean end of stream.
func (x *exchange) streamError() {
	var st *stream
	if x.provider == Google {
		st = x.startGoogleStream()
	} else {
		st = x.startStream(x.r.URL.Path == "/v1/chat/completions")
	}
	st.sendError()
	st.end()
}

// startGoogleStream starts an SSE answer as Google frames it: bare data
// lines, CRLF between events.
func (x *exchange) startGoogleStream() *stream {
	st := x.startStream(true)
	st.crlf = true
	return st
}

// sendError sends the step's StreamError as one event, named by its
// "type" (Chat Completions: a bare data line).
func (st *stream) sendError() {
	x := st.x
	data := x.render(x.step.StreamError)
	var typed struct {
		Type string `json:"type"`
	}
	name := "error"
	if json.Unmarshal(data, &typed) == nil && typed.Type != "" {
		name = typed.Type
	}
	if st.bare && x.provider != Google {
		name = "chat.completion.chunk"
	}
	st.send(name, data, false)
}
