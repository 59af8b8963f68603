package proxy

import (
	"net/http"
	"net/url"
	"strings"
)

// A client's key is subpool's, never the upstream's: it is sent to
// subpool as x-api-key, x-goog-api-key, Authorization: Bearer or the
// Gemini API's ?key=, and subpool sends the credential's own auth instead.
// outboundHeader drops the three headers; withoutClientKey takes the key
// out of everything else the request carries upstream: the query (the
// Gemini API's form on any route, or a tool's own parameter name) and any
// other header that holds it.

// keyParams are the query parameters a key travels in: the Gemini API's
// key and access_token, and the names other SDKs and tools use.
var keyParams = map[string]bool{"key": true, "api_key": true, "apikey": true, "api-key": true, "x-api-key": true, "access_token": true}

// minKeyLen is the shortest presented key looked for in other headers and
// query values: subpool's keys are far longer, and a short one (a tool's
// placeholder, with require_client_key = false) would match by chance.
const minKeyLen = 8

// withoutClientKey is r without its client key anywhere but the headers
// outboundHeader drops; r itself when there is nothing to take out.
func withoutClientKey(r *http.Request) *http.Request {
	key := presentedKey(r.Header)
	if key == "" && r.URL.RawQuery != "" {
		key = r.URL.Query().Get("key")
	}
	if len(key) < minKeyLen {
		key = ""
	}
	q, qCut := stripQuery(r.URL.RawQuery, key)
	h, hCut := stripHeaders(r.Header, key)
	if !qCut && !hCut {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	if qCut {
		u := *r.URL
		u.RawQuery, u.ForceQuery = q, false
		r2.URL = &u
	}
	if hCut {
		r2.Header = h
	}
	return r2
}

// stripQuery drops the key parameters, and any parameter whose value is
// key, from a raw query; the rest stays as the client wrote it, in order.
func stripQuery(raw, key string) (string, bool) {
	if raw == "" {
		return raw, false
	}
	var kept []string
	cut := false
	for pair := range strings.SplitSeq(raw, "&") {
		name, value, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if v, err := url.QueryUnescape(value); err == nil {
			value = v
		}
		if keyParams[strings.ToLower(name)] || key != "" && value == key {
			cut = true
			continue
		}
		kept = append(kept, pair)
	}
	if !cut {
		return raw, false
	}
	return strings.Join(kept, "&"), true
}

// stripHeaders is h less any header, other than those outboundHeader
// drops, whose value holds key (a tool that also sends it as api-key,
// say); h itself, shared, when none does.
func stripHeaders(h http.Header, key string) (http.Header, bool) {
	if key == "" {
		return h, false
	}
	var out http.Header
	for k, vs := range h {
		if dropOutbound[k] {
			continue
		}
		for _, v := range vs {
			if strings.Contains(v, key) {
				if out == nil {
					out = h.Clone()
				}
				delete(out, k)
				break
			}
		}
	}
	if out == nil {
		return h, false
	}
	return out, true
}
