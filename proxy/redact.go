package proxy

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// Upstream error bodies go to the client as they came (relay), and some
// echo the request they refuse, headers and all: the pool's own key or
// token would go with them. subpool's own messages quote an upstream with
// anything that looks like a key redacted (classify's quote); a relayed
// body is the upstream's bytes, so what is taken out of it is what subpool
// knows to be a secret: every credential's auth it has sent, the attempt's
// among them. Each is masked by a mask of its own length, so a
// Content-Length stays true and the body can stream.

// secretHeaders carry a credential's auth on an attempt (auth.Auth.Header).
var secretHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Proxy-Authorization", "Cookie"}

// minSecretLen is the shortest value taken for a secret: keys and tokens
// are far longer, and a short one would mask ordinary words.
const minSecretLen = 12

// secretsMax bounds the secrets remembered in one generation: logins
// renew their tokens, and the old ones are kept a generation more, so the
// attempt's own is still known when its answer is relayed.
const secretsMax = 256

// secrets are the credentials' auth values the proxy has sent.
type secrets struct{ recent }

// learn notes the secrets of one attempt's auth headers.
func (s *secrets) learn(h http.Header) {
	for _, k := range secretHeaders {
		for _, v := range h.Values(k) {
			if scheme, token, ok := strings.Cut(v, " "); ok && (strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "basic")) {
				v = strings.TrimSpace(token)
			}
			if len(v) >= minSecretLen {
				s.add(v)
			}
		}
	}
}

// list is every secret known, longest first, so that a secret holding a
// shorter one is masked whole.
func (s *secrets) list() [][]byte {
	out := s.all()
	// Few: an insertion sort keeps this free of another import.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// redactAnswer masks the pool's secrets in what relay gives the client
// of an upstream's refusal: the head read to classify it, an in-stream
// error's data, and the rest of an HTTP error's body as it is copied
// (the head goes with it, so a secret across the two is masked too).
func (rn *run) redactAnswer(a *answer) {
	list := rn.p.secrets.list()
	if len(list) == 0 || a.resp == nil {
		return
	}
	mask(a.head, list)
	mask(a.errData, list)
	if !rn.committed && !a.inStream {
		a.resp.Body = newRedactReader(io.MultiReader(bytes.NewReader(a.head), a.resp.Body), a.resp.Body, list)
		a.head = nil
	}
}

// maskEvent masks the pool's secrets in an error event relayed mid-stream,
// in place.
func (rn *run) maskEvent(raw []byte) {
	if list := rn.p.secrets.list(); len(list) > 0 {
		mask(raw, list)
	}
}

// mask overwrites each secret in b, in place.
func mask(b []byte, list [][]byte) { maskBefore(b, list, len(b)) }

// maskBefore overwrites each secret that starts before end in b, longest
// first (list's order), so that one holding a shorter secret goes whole.
func maskBefore(b []byte, list [][]byte, end int) {
	for _, s := range list {
		for i := 0; i < end; {
			j := bytes.Index(b[i:], s)
			if j < 0 || i+j >= end {
				break
			}
			i += j
			copy(b[i:], maskOf(len(s)))
			i += len(s)
		}
	}
}

// maskOf is "[redacted]" stretched to n bytes: "[redacted*****]".
func maskOf(n int) []byte {
	m := bytes.Repeat([]byte("*"), n)
	if n >= len("[redacted]") {
		copy(m, "[redacted")
		m[n-1] = ']'
	}
	return m
}

// redactReader masks secrets in a stream. Of what it has read it hands
// out only the part no secret can start in and run past: all but the last
// longest-secret-less-one bytes, which wait for the next read. A secret
// starting before them ends inside what was read, and is masked (the
// longest first) before it goes out.
type redactReader struct {
	src   io.Reader
	c     io.Closer
	list  [][]byte
	keep  int
	buf   []byte // read, not yet handed out; its first ready bytes masked
	ready int
	err   error
}

func newRedactReader(src io.Reader, c io.Closer, list [][]byte) *redactReader {
	return &redactReader{src: src, c: c, list: list, keep: len(list[0]) - 1, buf: make([]byte, 0, 32<<10+len(list[0]))}
}

func (r *redactReader) Read(p []byte) (int, error) {
	for r.ready == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if len(r.buf) == cap(r.buf) {
			r.buf = append(r.buf, 0)[:len(r.buf)]
		}
		n, err := r.src.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		r.err = err
		end := len(r.buf) - r.keep
		if err != nil {
			end = len(r.buf)
		}
		if end > 0 {
			maskBefore(r.buf, r.list, end)
			r.ready = end
		}
	}
	n := copy(p, r.buf[:r.ready])
	r.buf = r.buf[:copy(r.buf, r.buf[n:])]
	r.ready -= n
	return n, nil
}

func (r *redactReader) Close() error { return r.c.Close() }
