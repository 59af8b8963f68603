package proxy

// Streaming out: a successful answer to the client, its held preamble
// first, then event by event (or byte by byte for JSON), flushed as it
// arrives.

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/pool"
	"github.com/subpool/subpool/proxy/sse"
)

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
func (rn *run) deliver(lease *pool.Lease, a *answer) outcome {
	defer lease.Release()
	resp := a.resp
	defer resp.Body.Close()
	p := rn.p
	cred := lease.Credential
	out := outcome{status: resp.StatusCode, class: classify.OK, cred: cred.ID, credKind: cred.Kind, servedModel: rn.model}
	rn.meter = a.meter

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
		a.releaseHead()
	}
	if stream && werr == nil {
		rc.Flush()
	}
	// After the first bytes are on their way, not before: the client's
	// first token should not wait for the pool's bookkeeping. The upstream
	// answered 2xx whether or not the client is still there.
	p.o.Pool.Confirm(cred.ID, rn.model)
	if werr != nil {
		out.class = classify.Aborted
		return out
	}
	var err error
	var failed *classify.Verdict
	if a.events != nil {
		failed, err = rn.relayEvents(cred, a.events, resp.Body, rc)
		a.events.Release()
		a.events = nil
	} else {
		err = rn.copyJSON(resp, stream, rc)
	}
	switch {
	case err == nil && failed != nil:
		// The upstream's own error event ended the stream; the client has
		// it as the upstream sent it.
		out.class = failed.Class
		p.o.Pool.Record(cred.ID, false, failed.Class == classify.RateLimit)
	case err == nil:
		p.o.Pool.Record(cred.ID, true, false)
	case errors.Is(err, errClientGone) || rn.ctx.Err() != nil:
		out.class = classify.Aborted
	default:
		rn.failedMidway(cred.ID, a, err, rc, &out)
	}
	return out
}

// failedMidway: the upstream failed after bytes reached the client, so
// nothing can be retried without duplicating output. A stream says so
// in-band; a JSON answer cut short cannot be mended, and the client must
// see the connection fail (out.abort, after request_finished: serve).
func (rn *run) failedMidway(credID string, a *answer, err error, rc *http.ResponseController, out *outcome) {
	pl := rn.p.o.Pool
	pl.Record(credID, false, false)
	out.class = classify.Transient
	msg := "upstream stream failed midway: " + err.Error()
	stalled := a.wd.stalled() != notStalled
	if stalled {
		// The client's retry follows at once: it goes elsewhere.
		msg = a.wd.reason()
		pl.CoolDown(credID, rn.model, pool.Scope(classify.ScopeCredential), policy.StallCooldown, msg)
	}
	pl.SetReason(credID, msg)
	if !a.stream {
		out.abort = true
		return
	}
	rn.w.Write(rn.midwayError(msg, stalled))
	rc.Flush()
}

var errClientGone = errors.New("the client went away")

// releaseHead drops the sent head, its buffer back to heldBufs when it
// held a preamble of an ordinary size.
func (a *answer) releaseHead() {
	if a.held != nil && cap(a.head) <= 2*maxHeld {
		*a.held = a.head[:0]
		heldBufs.Put(a.held)
	}
	a.head, a.held = nil, nil
}

// relayEvents passes a stream's remaining events through unchanged. An
// error event among them is the upstream's last word to the client, and
// the pool still learns from it (a rate limit cools the credential for
// the next request); failed is its verdict.
func (rn *run) relayEvents(cred pool.Credential, r *sse.Reader, body io.Reader, rc *http.ResponseController) (failed *classify.Verdict, err error) {
	// Held here, not read through rn per event: with hundreds of streams
	// open, each stream's run is out of the cache by its next event, and
	// those loads were most of the loop's own time (perf annotate; the
	// meter's, through rn.request, was the last of them).
	w, sent, meter := rn.w, !rn.firstByte.IsZero(), &rn.meter
	for {
		ev, err := r.Next()
		isErr := len(ev.Raw) > 0 && isErrorEvent(ev)
		if isErr {
			// The upstream's last word may echo the request, the pool's
			// key with it (redact.go); content is never masked.
			rn.maskEvent(ev.Raw)
		}
		if len(ev.Raw) > 0 {
			if _, werr := w.Write(ev.Raw); werr != nil {
				return failed, errClientGone
			}
			if !sent {
				rn.firstByte, sent = rn.p.o.Clock.Now(), true
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
				if _, werr := w.Write(r.Buffered()); werr != nil {
					return failed, errClientGone
				}
				return failed, rn.copyBody(body, true, rc)
			}
			return failed, err
		}
		meter.Event(ev.Name, ev.Data)
		rn.readRateLimits(cred.ID, ev)
		if failed == nil && isErr {
			if v, ok := classify.ClassifyEvent(rn.profile, ev.Name, ev.Data, rn.p.o.Clock.Now()); ok {
				act := policy.Decide(rn.pol, policy.Attempt{Attempts: rn.attempts, Model: rn.model, Provider: rn.prov.Name, Started: true}, v)
				rn.p.o.Pool.Apply(cred.ID, rn.model, rn.tool, act, v)
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
		if resp.ContentLength > 0 {
			kept.Grow(int(resp.ContentLength)) // one buffer, not a doubling series
		}
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
