package proxy

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/jsonscan"
)

// errTooLarge is returned by readBody when the client sent more than
// max_body; the caller answers 413 in the provider's shape.
var errTooLarge = errors.New("request body too large")

// readBody reads the request body once, bounded, so that every attempt can
// send it again. Clients that send no body (GET /v1/models) get nil.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, deadline time.Time) (_ []byte, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, errTooLarge
	}
	// The deadline covers the body only: it is lifted once the body is in,
	// since the connection's reads go on (net/http watches for the client
	// leaving) while a long answer streams out. A writer that cannot set
	// one (a test's recorder) reads without.
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(deadline) == nil {
		defer func() {
			if err == nil {
				rc.SetReadDeadline(time.Time{})
			}
		}()
	}
	if n := r.ContentLength; n >= 0 {
		// The length is known (and net/http reads no further): one buffer
		// of that size, where growing one by doubling would allocate
		// about twice a large conversation and copy it on the way.
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	b, err := readUpTo(http.MaxBytesReader(w, r.Body, limit), limit)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, errTooLarge
	}
	return b, err
}

// A body of unknown length is read in blocks, each twice the last up to
// bodyBlockMax, and joined once at the end. io.ReadAll grows its buffer
// and then copies it to one of the final size, about twice the limit
// allocated on the way to a refusal: issue 27's 50 MB chunked upload,
// refused at max_body (32 MiB), took RSS from 98 to 173 MiB, and with
// the collector's target high that heap stayed. In blocks a refused body
// costs the limit once; one within it its size twice at worst (the
// blocks, then the buffer they are joined into) and once when it fits
// the first block.
const (
	bodyBlockFirst = 4 << 10
	bodyBlockMax   = 1 << 20
)

// readUpTo reads r to its end, refusing it (errTooLarge) as soon as it
// passes limit: no block reaches past the limit's first extra byte.
func readUpTo(r io.Reader, limit int64) ([]byte, error) {
	var blocks [][]byte
	var total int64
	size := int64(bodyBlockFirst)
	for {
		if total > limit {
			return nil, errTooLarge
		}
		b := make([]byte, min(size, limit+1-total))
		n, err := fill(r, b)
		total += int64(n)
		if n > 0 {
			blocks = append(blocks, b[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		size = min(2*size, bodyBlockMax)
	}
	switch {
	case total > limit:
		return nil, errTooLarge
	case len(blocks) == 0:
		return []byte{}, nil
	case len(blocks) == 1:
		return blocks[0], nil
	}
	out := make([]byte, 0, total)
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out, nil
}

// fill reads into b until it is full or r ends (io.EOF, whatever was
// read before it) or fails. Unlike io.ReadFull it keeps a source's own
// io.ErrUnexpectedEOF (a chunked body or a gzip stream cut short) an
// error, not the end of the body.
func fill(r io.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := r.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// codingError is a Content-Encoding subpool cannot read, or a body that
// does not decode as its encoding says: a 400, since the model the
// upstream would read in it is unknown.
type codingError struct{ msg string }

func (e codingError) Error() string { return e.msg }

// maxCodings bounds the encodings one body may be put through.
const maxCodings = 4

// decodeBody reads a request body through its Content-Encoding, each
// stage bounded by limit: the proxy reads a compressed body's model as it
// reads a plain one's, and a body that decodes past max_body is refused
// as one sent that large would be (errTooLarge). plain is nil for a body
// sent as it is. asCame: the upstream may be sent the body as it came,
// since it reads a plain gzip body as the proxy does; any other encoding
// (x-gzip, deflate, a list such as "gzip, identity") goes decoded, so that
// what the upstream reads is what was read here. An encoding it cannot
// read is a codingError.
func decodeBody(h http.Header, body []byte, limit int64) (plain []byte, asCame bool, err error) {
	var codings []string
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" {
				codings = append(codings, c)
			}
		}
	}
	if len(codings) == 0 {
		return nil, false, nil
	}
	if len(codings) > maxCodings {
		return nil, false, codingError{fmt.Sprintf("the body is encoded %d times (Content-Encoding %q); send it plain or gzip-compressed once", len(codings), strings.Join(codings, ", "))}
	}
	asCame = len(codings) == 1 && codings[0] == "gzip"
	plain = body
	// The last coding listed was applied last, so it comes off first.
	for i := len(codings) - 1; i >= 0 && len(plain) > 0; i-- {
		if plain, err = decodeOnce(codings[i], plain, limit); err != nil {
			return nil, false, err
		}
	}
	return plain, asCame, nil
}

func decodeOnce(coding string, body []byte, limit int64) ([]byte, error) {
	var r io.Reader
	switch coding {
	case "identity":
		return body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, codingError{"the body is not gzip, though its Content-Encoding says " + coding + "; send it plain or as gzip"}
		}
		r = zr
	case "deflate":
		// RFC 9110's deflate is a zlib stream; some clients send bare
		// deflate under the name, which the body's first bytes tell.
		if zr, err := zlib.NewReader(bytes.NewReader(body)); err == nil {
			r = zr
		} else {
			r = flate.NewReader(bytes.NewReader(body))
		}
	default:
		return nil, codingError{fmt.Sprintf("subpool cannot read a body with Content-Encoding %q (it reads gzip, x-gzip, deflate and identity); send it plain or as gzip", coding)}
	}
	out, err := readUpTo(r, limit)
	switch {
	case errors.Is(err, errTooLarge):
		return nil, errTooLarge
	case err != nil:
		return nil, codingError{"the body does not decode as its Content-Encoding " + coding + " says (" + err.Error() + "); send it plain or as gzip"}
	}
	return out, nil
}

// jsonBody is the request's body as JSON: decoded when it came compressed.
func (rq *request) jsonBody(body []byte) []byte {
	if rq.plain != nil {
		return rq.plain
	}
	return body
}

// requestInfo is what routing and selection need from a body: parsed once,
// tolerant of anything (a body we cannot parse is still forwarded; the
// upstream judges it).
type requestInfo struct {
	Model    string
	Stream   bool
	Affinity string
	// Flaw says why Model may not be the one the upstream reads
	// (jsonscan.Fields.Flaw); "" for none.
	Flaw string
}

// inspect extracts model, stream and the conversation key.
//
// Affinity keys, in order (docs/pool.md):
//   - Claude Code: metadata.user_id. Recent versions put a JSON string there
//     with a session_id; older ones a flat "user_…_session_<uuid>" string.
//     Either way it names one conversation.
//   - Codex CLI: the session_id header, else the body's prompt_cache_key.
//   - Anything else: the x-session-id header, if a client sends one.
func inspect(h http.Header, body []byte) requestInfo {
	var info requestInfo
	f, ok := jsonscan.Scan(body)
	info.Flaw = f.Flaw
	if ok {
		info.Model, info.Stream = f.Model, f.Stream
		info.Affinity = sessionFromUserID(f.UserID)
		if info.Affinity == "" && f.PromptCacheKey != "" {
			info.Affinity = "pck:" + f.PromptCacheKey
		}
	}
	if s := h.Get("session_id"); s != "" {
		info.Affinity = "sid:" + s
	} else if info.Affinity == "" {
		if s := h.Get("x-session-id"); s != "" {
			info.Affinity = "sid:" + s
		}
	}
	return info
}

func sessionFromUserID(uid string) string {
	if uid == "" {
		return ""
	}
	if strings.HasPrefix(uid, "{") {
		var v struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(uid), &v) == nil && v.SessionID != "" {
			return "cc:" + v.SessionID
		}
	}
	return "cc:" + uid
}
