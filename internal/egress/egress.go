// Package egress is where subpool's outbound connections leave from: the
// proxy of [network] proxy, a credential's own (add-key/login --proxy),
// or, when neither is set, the environment's HTTP_PROXY, HTTPS_PROXY and
// NO_PROXY. Every outbound client (requests, token refreshes, usage polls,
// a login's token exchange, Code Assist's setup) is built on one Egress,
// so none of them leaves from another address than the rest: a provider
// that refuses a region refuses every call that goes around the proxy.
//
// A credential's override travels with the request's context (auth.WithProxy),
// not in a transport of its own, so one transport and its connection pool
// serve every credential; net/http keys idle connections by proxy, so two
// credentials with different proxies never share one.
//
// HTTP, HTTPS and SOCKS5 proxies are net/http's own (Transport.Proxy takes
// socks5:// and socks5h:// URLs), so nothing here dials.
package egress

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/subpool/subpool/proxy/auth"
)

// Egress resolves the proxy of each outbound request. The zero value
// uses the environment's proxy variables only; its methods are safe for
// concurrent use.
type Egress struct {
	global atomic.Pointer[url.URL]
}

// New returns an Egress whose global proxy is raw ("" for none).
func New(raw string) (*Egress, error) {
	e := &Egress{}
	return e, e.SetGlobal(raw)
}

// SetGlobal replaces [network] proxy ("" for none: the environment's).
// Requests that start from now on use it; connections already open to the
// old proxy are left to finish and idle out.
func (e *Egress) SetGlobal(raw string) error {
	u, err := Parse(raw)
	if err != nil {
		return err
	}
	e.global.Store(u)
	return nil
}

// Proxy is http.Transport's Proxy: the context's proxy (auth.WithProxy), else
// the global one, else the environment's. A loopback destination (a local
// model server, a callback) is never sent through a configured proxy,
// which could not reach it; the environment's rules already skip it.
func (e *Egress) Proxy(req *http.Request) (*url.URL, error) {
	if loopback(req.URL.Hostname()) {
		return nil, nil
	}
	if u := auth.ProxyOf(req.Context()); u != nil {
		return u, nil
	}
	if u := e.global.Load(); u != nil {
		return u, nil
	}
	return http.ProxyFromEnvironment(req)
}

// Transport is the transport of subpool's own short calls (token
// endpoints, usage polls, updates) through e's proxy. The proxy's upstream
// transport is proxy.NewTransport with e.Proxy (daemon/egress.go): a copy
// of its settings here once lost its bound on the headers read.
func (e *Egress) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = e.Proxy
	t.ForceAttemptHTTP2 = true
	return t
}

// Client is an http.Client over rt bounded by timeout: token endpoints,
// usage polls and Code Assist's setup, short calls that must not hang.
func Client(rt http.RoundTripper, timeout time.Duration) *http.Client {
	return &http.Client{Transport: rt, Timeout: timeout}
}

// Parse checks a proxy address: http://, https://, socks5:// or
// socks5h:// with a host and, optionally, user:password. "" is no proxy
// (nil). The error says what a good one looks like and never repeats the
// address, which may hold a password.
func Parse(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("not a proxy address; write scheme://host:port, e.g. \"http://127.0.0.1:3128\" or \"socks5://127.0.0.1:1080\"")
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		return nil, fmt.Errorf("proxy scheme %q is not supported; use http://, https:// or socks5://", u.Scheme)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("a proxy address is scheme://host:port only, without a path or query")
	}
	u.Path = ""
	return u, nil
}

// Redact is a proxy address fit to show: scheme://host:port, with any
// user:password left out ("" stays ""; an unreadable one shows as
// "(invalid)"). list, logs and events only ever show this.
func Redact(raw string) string {
	if strings.TrimSpace(raw) == "" {
		return ""
	}
	u, err := Parse(raw)
	if err != nil {
		return "(invalid)"
	}
	return u.Scheme + "://" + u.Host
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
