// Package guard holds the localhost checks that the proxy listener and the
// admin API share: a web page the user happens to visit must not be able to
// reach either, by DNS rebinding (a hostile name resolving to 127.0.0.1) or
// by a cross-site request the browser sends without asking (a "simple" POST
// or a websocket handshake). The checks follow Tailscale's LocalAPI: refuse
// anything a browser marks as coming from a page, and any Host that does not
// name this machine.
package guard

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
)

// HostAllowed reports whether the Host header names a loopback address
// (127.0.0.0/8, ::1, "localhost", with or without port). With allowRemote,
// any host passes: the user chose to expose the proxy, and the client key is
// then mandatory (enforced elsewhere).
//
// An empty host fails: HTTP/1.0 requests may omit it, and a guard that lets
// "unknown" through is no guard.
func HostAllowed(host string, allowRemote bool) bool {
	if allowRemote {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		// No port: a bare IPv6 literal may still carry its brackets.
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if host == "" {
		return false
	}
	// "localhost." is the same name, fully qualified; resolvers treat it
	// alike, so a rebinding page gains nothing from it either.
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	// ::ffff:127.0.0.1 is the IPv4 loopback seen through a dual-stack socket.
	return ip.WithZone("").Unmap().IsLoopback()
}

// Browser reports whether the request came from a web page: it carries an
// Origin or a Referer, or a Sec-Fetch-Site other than "none" (which a
// browser sends only for a URL the user typed or bookmarked). allowOrigins
// lists exact origins ("https://app.example") the user allow-listed; a
// request whose Origin (or, lacking one, whose Referer's origin) is on that
// list passes.
//
// Each header is judged by all its values, not the first: an empty
// Origin followed by a hostile one is two Origins, and one page's request
// never carries two. So a header given twice, or given empty, counts as a
// web page's.
func Browser(r *http.Request, allowOrigins []string) bool {
	if vs, ok := r.Header["Origin"]; ok {
		return len(vs) != 1 || vs[0] == "" || !slices.Contains(allowOrigins, vs[0])
	}
	if vs, ok := r.Header["Referer"]; ok {
		return len(vs) != 1 || vs[0] == "" || !slices.Contains(allowOrigins, refererOrigin(vs[0]))
	}
	for _, site := range r.Header["Sec-Fetch-Site"] {
		if site != "none" {
			return true
		}
	}
	return false
}

// refererOrigin cuts a Referer down to scheme://host[:port], the form an
// Origin takes, so one allow-list serves both headers.
func refererOrigin(ref string) string {
	u, err := url.Parse(ref)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// Refusals counts requests turned away, by reason, for status and
// debugging. The zero value is ready to use.
type Refusals struct {
	Host   atomic.Int64 // Host not loopback
	Origin atomic.Int64 // came from a web page
	Auth   atomic.Int64 // missing or wrong token or client key
}

// Check runs the Host and browser checks in the order both listeners use,
// counts a refusal in n (which may be nil), and returns a one-line message
// saying what to do, or "" when the request may go on. Authentication is
// left to the caller: the proxy and the admin API take different secrets.
func Check(r *http.Request, allowRemote bool, allowOrigins []string, n *Refusals) string {
	if !HostAllowed(r.Host, allowRemote) {
		if n != nil {
			n.Host.Add(1)
		}
		return "refused: the Host header must name this machine (127.0.0.1, ::1 or localhost); " +
			"connect to the loopback address, or set allow_remote = true in config.toml"
	}
	if Browser(r, allowOrigins) {
		if n != nil {
			n.Origin.Add(1)
		}
		return "refused: requests from web pages are not accepted; " +
			"call from a local program, or allow-list the page's origin in config.toml"
	}
	return ""
}

// SecurityHeaders sets the headers that keep a browser from sniffing,
// framing or running anything from a response, in case one ever renders it.
//
// Every answer pays for this, so the keys are set as net/http spells them,
// without canonicalizing, and the values are shared: each slice's capacity
// is its length, so an append anywhere copies instead of writing into it.
func SecurityHeaders(h http.Header) {
	h["X-Content-Type-Options"] = nosniff
	h["X-Frame-Options"] = deny
	h["Content-Security-Policy"] = noContent
}

var (
	nosniff   = []string{"nosniff"}
	deny      = []string{"DENY"}
	noContent = []string{"default-src 'none'; frame-ancestors 'none'"}
)

// TokenEqual compares a presented token with the expected one in constant
// time. Both are hashed first because subtle.ConstantTimeCompare returns at
// once on a length mismatch, which would leak the token's length. An empty
// want never matches: an unset token must lock everything, not open it.
func TokenEqual(got, want string) bool {
	if want == "" {
		return false
	}
	g := sha256.Sum256([]byte(got))
	w := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}
