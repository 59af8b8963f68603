package proxy

// Sending upstream: the request with the credential's auth, the client's
// headers less what identifies it to subpool, and the headers subpool puts
// on every answer.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/pool"
)

// setHeaders names the credential and the attempts on the answer. Keys
// are set as net/http spells them, without canonicalizing: every answer
// pays for this.
func (rn *run) setHeaders(h http.Header, credID string) {
	if credID != "" {
		h["X-Subpool-Credential"] = []string{credID}
	}
	if rn.attempts < len(attemptValues) {
		h["X-Subpool-Attempts"] = attemptValues[rn.attempts]
	} else {
		h["X-Subpool-Attempts"] = []string{strconv.Itoa(rn.attempts)}
	}
}

// attemptValues are the usual x-subpool-attempts values, shared; each
// slice's capacity is its length, so an append copies.
var attemptValues = func() [][]string {
	v := make([][]string, 10)
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

// outReq is one attempt's request as it goes upstream, shaped by
// outbound from the run's, which nothing changes (httputil's
// ProxyRequest: the run's request is In, this is Out).
type outReq struct {
	r           *http.Request // whose method and headers go, less what send drops
	path, query string
	body        []byte
	// decoded: body is the plain form of a compressed one, so the
	// client's Content-Encoding does not go with it.
	decoded bool
	gemini  *geminiShape // the answer to put back in the client's form; nil off the Gemini wire
}

// outbound is the one place an attempt's request is shaped for its
// credential's auth au: on a detour (or a reshaped run) the wire au calls
// for, with the body and path in it; the model the run asks for; the
// /v1 a backend does not take; the Gemini form au answers, in or out of
// Code Assist's envelope. It fails when the detour's wire for au cannot
// carry the request, or with a notForCred when the credential cannot take
// it in any form; neither is the credential's fault.
func (rn *run) outbound(cred pool.Credential, au auth.Auth) (outReq, error) {
	o := outReq{r: rn.r, path: rn.upath, query: rn.r.URL.RawQuery, body: rn.body, decoded: rn.decoded}
	if d := rn.via; d != nil {
		w := d.upWire(au)
		body, err := d.body(w)
		if err != nil {
			return o, fmt.Errorf("this request cannot go to %s on %s: %w", w, cred.ID, err)
		}
		d.up = w // the wire the translating writer reads the answer in
		o.r, o.path, o.body = d.request(d.in, w), d.pathFor(w, d.clientPath), body
		o.query, o.decoded = o.r.URL.RawQuery, rn.plain != nil // the plain body, rewritten
	}
	if au.StripV1 {
		o.path = strings.TrimPrefix(o.path, "/v1")
	}
	if rn.wire != WireGemini {
		return o, nil
	}
	src := o.body
	if rn.plain != nil && !o.decoded {
		// The envelope is JSON work: on the plain body.
		src, o.decoded = rn.plain, true
	}
	s, err := geminiRequest(rn.gemini, rn.model, o.r.URL.Query(), src, au)
	if err != nil {
		// A Code Assist call that only a login answers, or the Gemini
		// API's model list, which a login has not.
		return o, notForCred{err}
	}
	o.gemini, o.path, o.query, o.body = &s, s.path, s.query, s.body
	return o, nil
}

// notForCred is outbound's error for a request that its credential cannot
// take in any form, whatever wire it goes in.
type notForCred struct{ error }

func (e notForCred) Unwrap() error { return e.error }

// send makes one upstream request, o with its credential's auth, on ctx
// (the request's, or one its deadlines cancel).
func (rn *run) send(ctx context.Context, au auth.Auth, o outReq) (*http.Response, error) {
	base := rn.prov.BaseURL
	if au.BaseURL != "" {
		base = au.BaseURL
	}
	payload := o.body
	u := strings.TrimRight(base, "/") + o.path
	if o.query != "" {
		u += "?" + o.query
	}
	var body io.Reader = http.NoBody
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	out, err := http.NewRequestWithContext(auth.WithProxy(ctx, au.Proxy), o.r.Method, u, body)
	if err != nil {
		return nil, err
	}
	out.Header = outboundHeader(o.r.Header, au.Header)
	if o.decoded {
		out.Header.Del("Content-Encoding")
	}
	if payload != nil {
		out.ContentLength = int64(len(payload))
		b := payload
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	rn.p.secrets.learn(au.Header)
	resp, err := rn.p.o.Transport.RoundTrip(out)
	resp, err = boundHeaders(out, resp, err, rn.wire)
	if err == nil && o.gemini != nil {
		reshapeAnswer(resp, *o.gemini)
	}
	return resp, err
}

// dropOutbound are headers never forwarded upstream: hop-by-hop ones, and
// anything that identifies the client to subpool rather than to the
// upstream. Keys are canonical, as net/http delivers them.
var dropOutbound = map[string]bool{
	"Authorization": true, "X-Api-Key": true, "X-Goog-Api-Key": true, "Cookie": true, "Host": true, "Content-Length": true,
	"Accept-Encoding": true, // the transport negotiates gzip and decodes it, so errors stay readable
	"Connection":      true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Forwarded": true, "X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true, "X-Real-Ip": true,
}

// outboundHeader builds the upstream request's headers in one pass over
// the client's (every request pays for it). Value slices are shared with
// the inbound request, which nothing modifies.
func outboundHeader(in, au http.Header) http.Header {
	h := make(http.Header, len(in)+len(au))
	for k, vs := range in {
		if dropOutbound[k] || strings.HasPrefix(k, "X-Subpool-") {
			continue
		}
		h[k] = vs
	}
	for k, vs := range au {
		ck := http.CanonicalHeaderKey(k)
		if ck == "Anthropic-Beta" {
			h[ck] = []string{mergeBetas(in.Values("Anthropic-Beta"), vs)}
			continue
		}
		h[ck] = vs
	}
	return h
}

// mergeBetas joins the client's betas with the ones a credential needs,
// once each, in order: Claude Code sends its own list and OAuth needs
// oauth-2025-04-20 on top.
func mergeBetas(client, need []string) string {
	seen := map[string]bool{}
	var out []string
	for _, list := range [][]string{client, need} {
		for _, v := range list {
			for _, b := range strings.Split(v, ",") {
				b = strings.TrimSpace(b)
				if b != "" && !seen[b] {
					seen[b] = true
					out = append(out, b)
				}
			}
		}
	}
	return strings.Join(out, ",")
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
