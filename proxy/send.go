package proxy

// Sending upstream: the request with the credential's auth, the client's
// headers less what identifies it to subpool, and the headers subpool puts
// on every answer.

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/subpool/subpool/proxy/auth"
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

// send makes one upstream request with cred's auth, on ctx (the
// request's, or one its deadlines cancel).
func (rn *run) send(ctx context.Context, au auth.Auth) (*http.Response, error) {
	base := rn.prov.BaseURL
	if au.BaseURL != "" {
		base = au.BaseURL
	}
	path, query, payload := rn.upath, rn.r.URL.RawQuery, rn.body
	if au.StripV1 {
		path = strings.TrimPrefix(path, "/v1")
	}
	var shape *geminiShape
	decoded := rn.decoded
	if rn.wire == WireGemini {
		src := rn.body
		if rn.plain != nil && !rn.decoded {
			// The envelope is JSON work: on the plain body.
			src, decoded = rn.plain, true
		}
		s, err := geminiRequest(rn.gemini, rn.model, rn.r.URL.Query(), src, au)
		if err != nil {
			return nil, err
		}
		shape, path, query, payload = &s, s.path, s.query, s.body
	}
	u := strings.TrimRight(base, "/") + path
	if query != "" {
		u += "?" + query
	}
	var body io.Reader = http.NoBody
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	out, err := http.NewRequestWithContext(auth.WithProxy(ctx, au.Proxy), rn.r.Method, u, body)
	if err != nil {
		return nil, err
	}
	out.Header = outboundHeader(rn.r.Header, au.Header)
	if decoded {
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
	if err == nil && shape != nil {
		reshapeAnswer(resp, *shape)
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
