package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/metering"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/pool"
	"github.com/subpool/subpool/proxy/sse"
)

// maxHeld bounds the stream preamble held back while we make sure a 200
// stream is not an error in disguise.
const maxHeld = 64 << 10

func isEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	// The two types upstreams send, spelled as they send them, are told
	// apart without a full media-type parse on every answer.
	if rest, ok := strings.CutPrefix(ct, "text/event-stream"); ok && (rest == "" || rest[0] == ';' || rest[0] == ' ') {
		return true
	}
	if strings.HasPrefix(ct, "application/json") {
		return false
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "text/event-stream"
}

// preamble events carry no content: an error may still follow them before
// the first delta, so they are held back with it.
var preamble = map[string]bool{
	"message_start": true, "ping": true, "content_block_start": true,
	"response.created": true, "response.in_progress": true,
	"response.output_item.added": true, "response.content_part.added": true,
	// Codex's backend reports the plan's windows in-stream before content.
	"codex.rate_limits": true, "codex.response.metadata": true,
}

// answer is one attempt's answer as far as it was read to judge it.
type answer struct {
	resp    *http.Response
	verdict classify.Verdict
	// head is what was read of the body: an error body's first
	// maxErrorBody bytes, or a stream's held-back preamble (the raw
	// bytes, error event included).
	head []byte
	// events reads the rest of a 200 stream after head; nil when the
	// stream goes on as plain bytes (one of its events was too large to
	// read as an event).
	events *sse.Reader
	stream bool
	// inStream: the verdict comes from an error event inside a 200
	// stream; errData is that event's data.
	inStream bool
	errData  []byte
	// meter has the usage of the events read so far; it becomes the
	// request's only if this answer is delivered.
	meter metering.Meter
}

func (a *answer) close() {
	if a.resp != nil {
		a.resp.Body.Close()
	}
}

// answer sends one attempt and reads as much of the answer as it takes to
// judge it: the status and headers, a refusal's body, or a 200 stream's
// events up to the first with content. Of a stream whose first event is
// no refusal, it sends the client the headers on the way (peek, commit).
func (rn *run) answer(cred pool.Credential, au auth.Auth) *answer {
	p := rn.p
	resp, err := rn.send(au)
	now := p.o.Clock.Now()
	a := &answer{resp: resp}
	if err != nil {
		if rn.ctx.Err() != nil {
			// The classifier reads this as aborted, never as the
			// upstream's fault.
			err = context.Canceled
		}
		a.verdict = classify.Classify(rn.profile, classify.Response{Err: err}, now)
		return a
	}
	if q, ok := classify.ReadWindows(resp.Header, now); ok {
		p.o.Pool.SetQuota(cred.ID, q)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if !ok {
		a.head, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		a.verdict = classify.Classify(rn.profile, classify.Response{Status: resp.StatusCode, Header: resp.Header, Body: a.head}, now)
	} else {
		a.verdict = classify.Verdict{Class: classify.OK, Status: resp.StatusCode}
	}
	// The budget is the model's the lease was taken for: upstreams count
	// request limits per model. A rate-limit refusal's budget is left to
	// its cooldown, which the classifier already times by the spent
	// count's reset; a second, budget-shaped cooldown would only repeat
	// it. It is set before the answer is acted on, with the lease still
	// held: a 2xx lets the waiting requests in, and they must meet it.
	if a.verdict.Class != classify.RateLimit {
		if n, reset, ok := classify.ParseBudget(resp.Header, now); ok {
			p.o.Pool.SetBudget(cred.ID, rn.model, n, reset)
		}
	}
	if ok && isEventStream(resp.Header) {
		rn.peek(a, cred.ID)
	}
	return a
}

// peek reads a 200 stream's events until the first one with content, or
// an error event: errors can arrive inside a 200 stream before any
// content, and such a stream is acted on like the HTTP error it stands
// for.
//
// Once the stream's first event has shown it is no error in disguise
// (the usual refusal comes first, in place of message_start), its headers
// go to the client while the events stay held: the client is then ready
// to read when content comes, and a later refusal before content can
// still be retried, since no byte of the body has gone out (commit).
func (rn *run) peek(a *answer, credID string) {
	r := sse.NewReader(a.resp.Body, 0, true)
	a.events, a.stream = r, true
	var held []byte
	for len(held) < maxHeld {
		ev, err := r.Next()
		held = append(held, ev.Raw...)
		if err != nil {
			switch {
			case errors.Is(err, io.EOF) && len(held) > 0:
				// A short stream that ended cleanly: deliver as is.
				a.head = held
				return
			case errors.Is(err, sse.ErrTooLarge):
				// Not ours to judge: pass it on as it comes.
				a.head = append(held, r.Buffered()...)
				a.events = nil
				return
			case rn.ctx.Err() != nil:
				a.verdict = classify.Verdict{Class: classify.Aborted, Reason: "the client went away"}
				return
			case errors.Is(err, io.EOF):
				err = io.ErrUnexpectedEOF
			}
			a.verdict = classify.Classify(rn.profile, classify.Response{Err: err}, rn.p.o.Clock.Now())
			return
		}
		if ev.Name == "" && len(ev.Data) == 0 {
			continue // a comment or keep-alive
		}
		a.meter.Event(ev.Name, ev.Data)
		rn.readRateLimits(credID, ev)
		if v, isErr := classify.ClassifyEvent(rn.profile, ev.Name, ev.Data, rn.p.o.Clock.Now()); isErr {
			a.verdict, a.inStream = v, true
			a.errData = bytes.Clone(ev.Data)
			a.head = held
			return
		}
		if !preamble[ev.Name] && !(ev.Name == "" && emptyChatChunk(ev.Data)) {
			break
		}
		if !rn.committed {
			rn.commit(a.resp, credID)
		}
	}
	a.head = held
}

// emptyChatChunk reports a Chat Completions chunk that carries no content
// yet: the opening one names the role with an empty content, and an error
// may still follow it. It only runs on a stream's first events.
func emptyChatChunk(data []byte) bool {
	var c struct {
		Choices []struct {
			Delta map[string]json.RawMessage `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &c) != nil || len(c.Choices) == 0 {
		return false
	}
	for _, ch := range c.Choices {
		for k, v := range ch.Delta {
			switch string(v) {
			case `""`, "null", "[]":
				continue
			}
			if k != "role" {
				return false
			}
		}
	}
	return true
}

// commit sends the client a stream's status and headers before its body.
// From here on the client's status is 200 whatever follows: a refusal it
// must see goes in the stream, in the wire's own error event (relay, fail).
func (rn *run) commit(resp *http.Response, credID string) {
	h := rn.w.Header()
	copyHeader(h, resp.Header)
	rn.setHeaders(h, credID)
	h.Del("Content-Length")
	rn.w.WriteHeader(resp.StatusCode)
	http.NewResponseController(rn.w).Flush()
	rn.committed = true
}

// copyBufs hold a JSON answer's copy buffer. 16 KiB, not the usual 32: a
// read returns what the upstream flushed, so a larger buffer is only
// memory held by every open answer.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// deliver gives the client a successful answer: headers, what was held
// back, then the rest as it arrives. A stream goes event by event, each
// flushed as soon as no further event is already at hand; an error event
// in it (after bytes reached the client, so nothing can be retried) still
// tells the pool about the credential.
func (rn *run) deliver(lease *pool.Lease, a *answer) {
	defer lease.Release()
	resp := a.resp
	defer resp.Body.Close()
	p := rn.p
	cred := lease.Credential
	rn.cred, rn.class, rn.status = cred.ID, classify.OK, resp.StatusCode
	rn.credKind, rn.servedModel, rn.meter = cred.Kind, rn.model, a.meter

	stream := a.stream || resp.ContentLength < 0
	if !rn.committed {
		h := rn.w.Header()
		copyHeader(h, resp.Header)
		rn.setHeaders(h, cred.ID)
		if stream {
			h.Del("Content-Length")
		}
		rn.w.WriteHeader(resp.StatusCode)
	}
	rc := http.NewResponseController(rn.w)
	var werr error
	if len(a.head) > 0 {
		if _, werr = rn.w.Write(a.head); werr == nil {
			rn.firstByte = p.o.Clock.Now()
		}
		// Sent: a stream would otherwise keep its preamble for its life.
		a.head = nil
	}
	if stream && werr == nil {
		rc.Flush()
	}
	// After the first bytes are on their way, not before: the client's
	// first token should not wait for the pool's bookkeeping. The upstream
	// answered 2xx whether or not the client is still there.
	p.o.Pool.Confirm(cred.ID, rn.model)
	if werr != nil {
		rn.clientGone(cred.ID)
		return
	}
	var err error
	var failed *classify.Verdict
	if a.events != nil {
		failed, err = rn.relayEvents(cred, a.events, resp.Body, rc)
	} else {
		err = rn.copyJSON(resp, stream, rc)
	}
	switch {
	case err == nil && failed != nil:
		// The upstream's own error event ended the stream; the client has
		// it as the upstream sent it.
		rn.class = failed.Class
		p.o.Pool.Record(cred.ID, false, failed.Class == classify.RateLimit)
	case err == nil:
		p.o.Pool.Record(cred.ID, true, false)
	case errors.Is(err, errClientGone) || rn.ctx.Err() != nil:
		rn.clientGone(cred.ID)
	default:
		// The upstream failed after bytes reached the client: nothing can
		// be retried without duplicating output. Say so in-band.
		p.o.Pool.Record(cred.ID, false, false)
		rn.class = classify.Transient
		msg := "upstream stream failed midway: " + err.Error()
		p.o.Pool.SetReason(cred.ID, msg)
		if a.stream {
			rn.w.Write(sseError(rn.prov.Wire, msg))
			rc.Flush()
			return
		}
		// A JSON answer cut short cannot be mended: the client must see
		// the connection fail (after request_finished, see serve).
		rn.abort = true
	}
}

var errClientGone = errors.New("the client went away")

// relayEvents passes a stream's remaining events through unchanged. An
// error event among them is the upstream's last word to the client, and
// the pool still learns from it (a rate limit cools the credential for
// the next request); failed is its verdict.
func (rn *run) relayEvents(cred pool.Credential, r *sse.Reader, body io.Reader, rc *http.ResponseController) (failed *classify.Verdict, err error) {
	for {
		ev, err := r.Next()
		if len(ev.Raw) > 0 {
			if _, werr := rn.w.Write(ev.Raw); werr != nil {
				return failed, errClientGone
			}
			if rn.firstByte.IsZero() {
				rn.firstByte = rn.p.o.Clock.Now()
			}
			// Flush unless the next event is already here: one flush per
			// upstream write, not per event of it.
			if !bytes.Contains(r.Buffered(), []byte("\n")) {
				rc.Flush()
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return failed, nil
			}
			if errors.Is(err, sse.ErrTooLarge) {
				// Too large to judge: the rest goes through as bytes.
				if _, werr := rn.w.Write(r.Buffered()); werr != nil {
					return failed, errClientGone
				}
				return failed, rn.copyBody(body, true, rc)
			}
			return failed, err
		}
		if err == nil {
			rn.meter.Event(ev.Name, ev.Data)
			rn.readRateLimits(cred.ID, ev)
		}
		if failed == nil && isErrorEvent(ev) {
			if v, isErr := classify.ClassifyEvent(rn.profile, ev.Name, ev.Data, rn.p.o.Clock.Now()); isErr {
				act := policy.Decide(rn.pol, policy.Attempt{Attempts: rn.attempts, Model: rn.model, Provider: rn.prov.Name, Started: true}, v)
				rn.record(cred, act, v)
				failed = &v
			}
		}
	}
}

// isErrorEvent is a cheap look for what ClassifyEvent would call an
// error, so ordinary content is not parsed twice.
func isErrorEvent(ev sse.Event) bool {
	switch ev.Name {
	case "error", "response.failed":
		return true
	case "":
		return bytes.Contains(ev.Data, []byte(`"error"`))
	}
	return false
}

// maxMetered bounds the JSON answer kept to read its usage from: usage
// sits at the end of the object, so the answer is read once it is whole.
// A larger answer (none is, in practice) goes unmetered.
const maxMetered = 4 << 20

// copyJSON copies a JSON answer and reads the usage it reports.
func (rn *run) copyJSON(resp *http.Response, stream bool, rc *http.ResponseController) error {
	var kept bytes.Buffer
	src := io.Reader(resp.Body)
	if resp.ContentLength <= maxMetered {
		src = io.TeeReader(resp.Body, &limitedBuffer{b: &kept, n: maxMetered})
	}
	err := rn.copyBody(src, stream, rc)
	if err == nil && kept.Len() > 0 && kept.Len() < maxMetered {
		rn.meter.JSON(kept.Bytes())
	}
	return err
}

// limitedBuffer keeps at most n bytes and then stops keeping, silently.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.b.Len()+len(p) <= l.n {
		l.b.Write(p)
	} else {
		l.b.Reset()
		l.n = 0
	}
	return len(p), nil
}

// copyBody copies a JSON (or other non-SSE) answer, flushing each read
// when it streams.
func (rn *run) copyBody(src io.Reader, stream bool, rc *http.ResponseController) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if _, werr := rn.w.Write(buf[:n]); werr != nil {
				return errClientGone
			}
			if rn.firstByte.IsZero() {
				rn.firstByte = rn.p.o.Clock.Now()
			}
			if stream {
				rc.Flush()
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return nil
			}
			return rerr
		}
	}
}

// relay gives the client the upstream's refusal: an HTTP error as it came,
// byte for byte however large (only its head was read to classify it); an
// error inside a 200 stream as the HTTP error it stands for, with the
// provider's JSON error body, never as an empty 200. Once the client has
// a stream's headers (commit), the refusal goes in the stream: the
// upstream's own events up to its error, or its HTTP error as the wire's
// error event.
func (rn *run) relay(credID string, a *answer, status int) {
	rn.class, rn.cred, rn.status = a.verdict.Class, credID, status
	if a.resp == nil {
		rn.fail(http.StatusBadGateway, rn.lastReason, 0, mayRetry)
		return
	}
	defer a.resp.Body.Close()
	if rn.committed {
		ev := a.head
		if !a.inStream {
			ev = errorEvent(rn.prov.Wire, status, a.head)
		}
		rn.w.Write(ev)
		http.NewResponseController(rn.w).Flush()
		return
	}
	h := rn.w.Header()
	copyHeader(h, a.resp.Header)
	rn.setHeaders(h, credID)
	if a.verdict.Class == classify.ClientError {
		// The request itself is refused (a 429 credits_required among
		// them): sent again it is refused again.
		h.Set("X-Should-Retry", "false")
	}
	if a.inStream {
		body := streamErrorBody(rn.prov.Wire, a.errData)
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		rn.w.WriteHeader(status)
		rn.w.Write(body)
		return
	}
	rn.w.WriteHeader(status)
	if _, err := rn.w.Write(a.head); err != nil {
		return
	}
	io.Copy(rn.w, a.resp.Body)
}

// streamErrorBody is an in-stream error event's data as the error body the
// same API sends with an HTTP status. Anthropic's error event and a Chat
// Completions error chunk already are one; a Responses `response.failed`
// or `error` event has its error elsewhere and is reshaped.
func streamErrorBody(wire string, data []byte) []byte {
	var ev struct {
		Type     string          `json:"type"`
		Error    json.RawMessage `json:"error"`
		Code     any             `json:"code"`
		Message  string          `json:"message"`
		Param    any             `json:"param"`
		Response struct {
			Error *struct {
				Code    any    `json:"code"`
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return errorBody(wire, http.StatusBadGateway, "the upstream sent an unreadable error: "+quoteShort(string(data)))
	}
	if len(ev.Error) > 0 && ev.Error[0] == '{' {
		return data
	}
	type oe struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   any    `json:"param"`
		Code    any    `json:"code"`
	}
	e := oe{Message: ev.Message, Type: "server_error", Param: ev.Param, Code: ev.Code}
	if r := ev.Response.Error; r != nil {
		e.Message, e.Code = r.Message, r.Code
		if r.Type != "" {
			e.Type = r.Type
		}
	}
	if c, ok := e.Code.(string); ok && e.Type == "server_error" {
		switch c {
		case "context_length_exceeded", "invalid_prompt", "invalid_request_error":
			e.Type = "invalid_request_error"
		case "rate_limit_exceeded", "insufficient_quota", "usage_limit_reached":
			e.Type = c
		}
	}
	b, _ := json.Marshal(struct {
		Error oe `json:"error"`
	}{e})
	return b
}

func (rn *run) clientGone(credID string) {
	rn.class = classify.Aborted
	rn.cred = credID
}

// hopHeaders are connection-level and must not be copied to the client.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		// Shared with the upstream's header, capped so that an append on
		// either side copies instead of writing into the other.
		dst[k] = vs[:len(vs):len(vs)]
	}
	for _, k := range hopHeaders {
		dst.Del(k)
	}
}

func jitter() float64 { return rand.Float64() }

// readRateLimits gives the pool the windows a Codex stream reports in its
// codex.rate_limits event, as the x-codex-* headers are read. Only a named
// event is read: Codex's backend names it, and an unnamed event is a Chat
// Completions chunk, not worth a look each.
func (rn *run) readRateLimits(credID string, ev sse.Event) {
	if ev.Name != "codex.rate_limits" {
		return
	}
	if q, ok := classify.ReadRateLimitEvent(ev.Name, ev.Data, rn.p.o.Clock.Now()); ok {
		rn.p.o.Pool.SetQuota(credID, q)
	}
}
