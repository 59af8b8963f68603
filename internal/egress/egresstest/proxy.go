// Package egresstest is a counting HTTP proxy on loopback for tests of
// what leaves through an egress proxy.
package egresstest

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy is an HTTP proxy on loopback that takes every request, whatever
// host it names, to one target address, and notes what passed: the
// absolute-form requests of plain HTTP ("POST /v1/messages") and the
// CONNECTs of HTTPS ("CONNECT example.com:443"). Tests name upstreams by
// hosts that resolve nowhere (sim.invalid), so a call that went around
// the proxy fails instead of passing unseen.
type Proxy struct {
	// Addr is where the proxy listens (host:port).
	Addr   string
	target string
	srv    *http.Server

	mu    sync.Mutex
	seen  []string
	auths []string // the Proxy-Authorization of each
}

// Start runs a Proxy to target until the test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: target, Addr: ln.Addr().String()}
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(ln)
	t.Cleanup(func() { p.srv.Close() })
	return p
}

// direct is the proxy's own way upstream: never through another proxy.
var direct = &http.Transport{Proxy: nil}

// ServeHTTP forwards one request, or tunnels one CONNECT.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	what := r.Method + " " + r.URL.Path
	if r.Method == http.MethodConnect {
		what = "CONNECT " + r.Host
	}
	p.mu.Lock()
	p.seen = append(p.seen, what)
	p.auths = append(p.auths, r.Header.Get("Proxy-Authorization"))
	p.mu.Unlock()
	if r.Method == http.MethodConnect {
		p.tunnel(w)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI, out.URL.Scheme, out.URL.Host = "", "http", p.target
	out.Header.Del("Proxy-Authorization")
	resp, err := direct.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			w.(http.Flusher).Flush()
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) tunnel(w http.ResponseWriter) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		up.Close()
		return
	}
	conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	go func() { io.Copy(up, conn); up.Close() }()
	io.Copy(conn, up)
	conn.Close()
}

// Count is how many requests starting with prefix passed.
func (p *Proxy) Count(prefix string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.seen {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// Log lists what passed, for failure messages.
func (p *Proxy) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.seen, ", ")
}

// Auths pairs each request that passed with its Proxy-Authorization.
func (p *Proxy) Auths() (seen, auths []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...), append([]string(nil), p.auths...)
}

// WaitCount waits, within a bound, for n requests starting with prefix:
// a background loop (the usage poller) makes them on its own goroutine.
func (p *Proxy) WaitCount(t testing.TB, prefix string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Count(prefix) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d × %q through the proxy, want %d; it saw: %s", p.Count(prefix), prefix, n, p.Log())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
