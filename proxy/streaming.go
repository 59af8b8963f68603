package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/pool"
)

// maxHeld bounds the stream preamble held back while we make sure a 200
// stream is not an error in disguise.
const maxHeld = 64 << 10

func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// preamble events carry no content: an error may still follow them before
// the first delta, so they are held back with it.
var preamble = map[string]bool{
	"message_start": true, "ping": true, "content_block_start": true,
	"response.created": true, "response.in_progress": true,
	"response.output_item.added": true, "response.content_part.added": true,
}

// peekStream reads a 200 stream's events until the first one with content
// (or an error). It returns what it held back and where to read the rest.
func (rn *run) peekStream(resp *http.Response) (held []byte, src io.Reader, v classify.Verdict) {
	// Small on purpose: the reader only lives for the preamble, and a
	// longer line is still read whole (readEvent handles ErrBufferFull).
	br := bufio.NewReaderSize(resp.Body, 4<<10)
	var buf bytes.Buffer
	for buf.Len() < maxHeld {
		name, data, err := readEvent(br, &buf)
		if err != nil {
			if errors.Is(err, io.EOF) && buf.Len() > 0 {
				// A short stream that ended cleanly: deliver as is.
				return buf.Bytes(), resp.Body, classify.Verdict{Class: classify.OK}
			}
			if rn.ctx.Err() != nil {
				return nil, nil, classify.Verdict{Class: classify.Aborted}
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, nil, classify.Classify(rn.profile, classify.Response{Err: err}, rn.p.o.Clock.Now())
		}
		if name == "" && len(data) == 0 {
			continue // a comment or keep-alive
		}
		if ev, isErr := classify.ClassifyEvent(rn.profile, name, data, rn.p.o.Clock.Now()); isErr {
			return nil, nil, ev
		}
		if !preamble[name] {
			break
		}
	}
	// Hand over what the reader already holds and let it go: the rest of
	// the stream is read straight from the body, so a long stream does
	// not keep the peek's buffer alive.
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		buf.Write(b)
	}
	return buf.Bytes(), resp.Body, classify.Verdict{Class: classify.OK}
}

// readEvent reads one SSE event (up to the blank line), appending its raw
// bytes to raw, and returns its event name and data.
func readEvent(br *bufio.Reader, raw *bytes.Buffer) (name string, data []byte, err error) {
	for {
		line, err := br.ReadSlice('\n')
		raw.Write(line)
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				// An over-long line: keep it, it is data.
				data = append(data, line...)
				continue
			}
			return name, data, err
		}
		t := bytes.TrimRight(line, "\r\n")
		if len(t) == 0 {
			return name, data, nil
		}
		switch {
		case bytes.HasPrefix(t, []byte("event:")):
			name = strings.TrimSpace(string(t[6:]))
		case bytes.HasPrefix(t, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(t[5:], []byte(" "))...)
		}
	}
}

// copyBufs hold a stream's copy buffer. 16 KiB, not the usual 32: a read
// returns what the upstream flushed, and SSE events are far smaller, so
// a larger buffer is only memory held by every open stream.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// deliver streams a successful answer to the client: headers, whatever was
// held back, then the rest as it arrives, flushed per read so SSE events
// reach the client one by one.
func (rn *run) deliver(lease *pool.Lease, resp *http.Response, held []byte, src io.Reader) {
	defer lease.Release()
	defer resp.Body.Close()
	p := rn.p
	cred := lease.Credential
	rn.cred, rn.class, rn.status = cred.ID, classify.OK, resp.StatusCode
	p.o.Pool.Confirm(cred.ID, rn.info.Model)

	h := rn.w.Header()
	copyHeader(h, resp.Header)
	rn.setHeaders(h, cred.ID)
	stream := isEventStream(resp.Header) || resp.ContentLength < 0
	if stream {
		h.Del("Content-Length")
	}
	rn.w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(rn.w)
	if len(held) > 0 {
		if _, err := rn.w.Write(held); err != nil {
			rn.clientGone(cred.ID)
			return
		}
	}
	if stream {
		rc.Flush()
	}

	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if _, werr := rn.w.Write(buf[:n]); werr != nil {
				rn.clientGone(cred.ID)
				return
			}
			if stream {
				rc.Flush()
			}
		}
		if rerr == nil {
			continue
		}
		if errors.Is(rerr, io.EOF) {
			p.o.Pool.Record(cred.ID, true, false)
			return
		}
		if rn.ctx.Err() != nil {
			rn.clientGone(cred.ID)
			return
		}
		// The upstream failed after bytes reached the client: nothing can
		// be retried without duplicating output. Say so in-band.
		p.o.Pool.Record(cred.ID, false, false)
		rn.class = classify.Transient
		msg := "upstream stream failed midway: " + rerr.Error()
		p.o.Pool.SetReason(cred.ID, msg)
		if isEventStream(resp.Header) {
			rn.w.Write(sseError(rn.prov.Wire, msg))
			rc.Flush()
			return
		}
		panic(http.ErrAbortHandler)
	}
}

func (rn *run) clientGone(credID string) {
	rn.class = classify.Aborted
	rn.cred = credID
}

// hopHeaders are connection-level and must not be copied to the client.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
	for _, k := range hopHeaders {
		dst.Del(k)
	}
}

func jitter() float64 { return rand.Float64() }
