package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/subpool/subpool/internal/egress/egresstest"
	"github.com/subpool/subpool/proxy/auth"
)

// socks5 is a SOCKS5 server on loopback (RFC 1928, with RFC 1929's
// user/password) that connects every CONNECT to target and notes the
// address each asked for and the user it gave.
type socks5 struct {
	target string
	ln     net.Listener
	mu     sync.Mutex
	asked  []string
	users  []string
}

func startSOCKS5(t *testing.T, target string) *socks5 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &socks5{target: target, ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *socks5) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(r, hdr); err != nil || hdr[0] != 5 {
		return
	}
	methods := make([]byte, hdr[1])
	io.ReadFull(r, methods)
	user := ""
	if strings.IndexByte(string(methods), 2) >= 0 {
		c.Write([]byte{5, 2})
		ver, _ := r.ReadByte()
		ul, _ := r.ReadByte()
		u := make([]byte, ul)
		io.ReadFull(r, u)
		pl, _ := r.ReadByte()
		io.ReadFull(r, make([]byte, pl))
		if ver != 1 {
			return
		}
		user = string(u)
		c.Write([]byte{1, 0})
	} else {
		c.Write([]byte{5, 0})
	}
	req := make([]byte, 4)
	if _, err := io.ReadFull(r, req); err != nil || req[1] != 1 {
		return
	}
	var host string
	switch req[3] {
	case 1:
		b := make([]byte, 4)
		io.ReadFull(r, b)
		host = net.IP(b).String()
	case 3:
		n, _ := r.ReadByte()
		b := make([]byte, n)
		io.ReadFull(r, b)
		host = string(b)
	case 4:
		b := make([]byte, 16)
		io.ReadFull(r, b)
		host = net.IP(b).String()
	}
	pb := make([]byte, 2)
	io.ReadFull(r, pb)
	s.mu.Lock()
	s.asked = append(s.asked, net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(pb)))))
	s.users = append(s.users, user)
	s.mu.Unlock()
	up, err := net.Dial("tcp", s.target)
	if err != nil {
		c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	defer up.Close()
	c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	go io.Copy(up, r)
	io.Copy(c, up)
}

func (s *socks5) seen() ([]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...), append([]string(nil), s.users...)
}

// [network] proxy may be SOCKS5: net/http's own dialer carries it, the
// name resolved at the proxy (sim.invalid resolves nowhere else), with
// the user and password the address gives.
func TestSOCKS5ProxyCarriesTheRequest(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served "+r.URL.Path) }))
	t.Cleanup(up.Close)
	sp := startSOCKS5(t, strings.TrimPrefix(up.URL, "http://"))
	e, err := New("socks5://socks:pw@" + sp.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := Client(e.Transport(), 0)
	resp, err := c.Get("http://sim.invalid:4242/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "served /v1/messages" {
		t.Fatalf("answer %q", b)
	}
	asked, users := sp.seen()
	if len(asked) != 1 || asked[0] != "sim.invalid:4242" || users[0] != "socks" {
		t.Fatalf("SOCKS5 saw %v as %v, want one CONNECT to sim.invalid:4242 as socks", asked, users)
	}
}

// The proxy of a call: the credential's own (on its context), else
// [network] proxy, else the environment's; never one for loopback.
func TestProxyOrder(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://env.example:8080")
	t.Setenv("HTTP_PROXY", "http://env.example:8080")
	own, _ := url.Parse("socks5://own.example:1080")
	cases := []struct {
		name, global, target string
		own                  *url.URL
		want                 string
	}{
		{"nothing set: the environment's", "", "https://api.openai.com/v1/responses", nil, "http://env.example:8080"},
		{"[network] proxy beats the environment", "http://net.example:3128", "https://api.openai.com/v1/responses", nil, "http://net.example:3128"},
		{"a credential's own beats [network] proxy", "http://net.example:3128", "https://api.openai.com/v1/responses", own, "socks5://own.example:1080"},
		{"loopback goes direct", "http://net.example:3128", "http://127.0.0.1:11434/v1/chat/completions", own, ""},
		{"localhost goes direct", "http://net.example:3128", "http://localhost:1234/v1/models", nil, ""},
	}
	for _, c := range cases {
		e, err := New(c.global)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(auth.WithProxy(context.Background(), c.own), http.MethodGet, c.target, nil)
		u, err := e.Proxy(req)
		got := ""
		if u != nil {
			got = u.String()
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		}
	}
}

func TestParseAndRedact(t *testing.T) {
	for _, c := range []struct{ in, redacted, err string }{
		{"", "", ""},
		{"http://127.0.0.1:3128", "http://127.0.0.1:3128", ""},
		{"socks5://user:s3cret@proxy.example:1080", "socks5://proxy.example:1080", ""},
		{"https://u:p@proxy.example", "https://proxy.example", ""},
		{"ftp://proxy.example:21", "(invalid)", "not supported"},
		{"proxy.example:3128", "(invalid)", "scheme://host:port"},
		{"http://u:s3cret@proxy.example:3128/path", "(invalid)", "without a path"},
	} {
		_, err := Parse(c.in)
		switch {
		case c.err == "" && err != nil, c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Parse(%q) = %v, want an error with %q", c.in, err, c.err)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("Parse(%q)'s error repeats the password: %v", c.in, err)
		}
		if got := Redact(c.in); got != c.redacted {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.redacted)
		}
	}
}

// HTTPS leaves through [network] proxy as a CONNECT carrying its
// user:password; a credential's own proxy (on the call's context) takes
// that call instead. The upstream's name is the test certificate's
// example.com, reached only through the proxies.
func TestHTTPSTunnelsThroughTheProxyOfTheCall(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(up.Close)
	target := strings.TrimPrefix(up.URL, "https://")
	_, port, _ := net.SplitHostPort(target)
	global, own := egresstest.Start(t, target), egresstest.Start(t, target)
	e, err := New("http://net:pw@" + global.Addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := e.Transport()
	tr.TLSClientConfig = up.Client().Transport.(*http.Transport).TLSClientConfig
	c := Client(tr, 0)
	ownURL, _ := Parse("http://" + own.Addr)
	for _, ctx := range []context.Context{context.Background(), auth.WithProxy(context.Background(), ownURL)} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://example.com:"+port+"/v1/responses", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	seen, auths := global.Auths()
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("net:pw"))
	if len(seen) != 1 || seen[0] != "CONNECT example.com:"+port || auths[0] != want {
		t.Fatalf("[network] proxy saw %v with %v, want one CONNECT with its credentials", seen, auths)
	}
	if n := own.Count("CONNECT example.com:"); n != 1 {
		t.Fatalf("the credential's own proxy saw %s, want one CONNECT", own.Log())
	}
}
