package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/auth"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/events"
	"github.com/subpool/subpool/proxy/pool"
)

// The BenchmarkMicro* functions are the micro rows of docs/benchmarks.md:
// `make bench` runs them with `go test -bench '^BenchmarkMicro'` and parses
// ns/op and allocs/op. They assert nothing about time.

// microClaudeCodeHeader is what Claude Code sends on /v1/messages (values from
// a captured request; the key is the client key the proxy strips).
func microClaudeCodeHeader() http.Header {
	h := http.Header{}
	for _, kv := range [][2]string{
		{"Accept", "application/json"},
		{"Accept-Encoding", "gzip, deflate, br, zstd"},
		{"Anthropic-Beta", "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"},
		{"Anthropic-Dangerous-Direct-Browser-Access", "true"},
		{"Anthropic-Version", "2023-06-01"},
		{"Connection", "keep-alive"},
		{"Content-Type", "application/json"},
		{"User-Agent", "claude-cli/2.0.14 (external, cli)"},
		{"X-Api-Key", "sp-client-0123456789abcdef0123456789abcdef"},
		{"X-App", "cli"},
		{"X-Stainless-Arch", "x64"},
		{"X-Stainless-Helper-Method", "stream"},
		{"X-Stainless-Lang", "js"},
		{"X-Stainless-Os", "Linux"},
		{"X-Stainless-Package-Version", "0.60.0"},
		{"X-Stainless-Retry-Count", "0"},
		{"X-Stainless-Runtime", "node"},
		{"X-Stainless-Runtime-Version", "v22.17.0"},
		{"X-Stainless-Timeout", "600"},
	} {
		h.Set(kv[0], kv[1])
	}
	return h
}

// BenchmarkMicroRewrite is the outbound header build for one attempt with
// an API key: the client's headers cloned, its auth and hop-by-hop headers
// dropped, the credential's key set.
func BenchmarkMicroRewrite(b *testing.B) {
	in := microClaudeCodeHeader()
	auth := http.Header{"X-Api-Key": {"sk-ant-api03-0123456789abcdef0123456789abcdef"}}
	b.ReportAllocs()
	for b.Loop() {
		outboundHeader(in, auth)
	}
}

// BenchmarkMicroRewriteOAuth adds what a Claude subscription needs: a
// bearer token and the oauth beta merged into the client's list.
func BenchmarkMicroRewriteOAuth(b *testing.B) {
	in := microClaudeCodeHeader()
	auth := http.Header{
		"Authorization":  {"Bearer sk-ant-oat01-0123456789abcdef0123456789abcdef"},
		"Anthropic-Beta": {"oauth-2025-04-20"},
	}
	b.ReportAllocs()
	for b.Loop() {
		outboundHeader(in, auth)
	}
}

// BenchmarkMicroPick8 picks among 8 ready credentials that report usage,
// as a pool of subscriptions does, and releases the lease.
func BenchmarkMicroPick8(b *testing.B) {
	p := pool.New(clock.Real{}, pool.Config{}, nil)
	for i := range 8 {
		id := fmt.Sprintf("key-%d", i)
		p.Add(pool.Credential{ID: id, Provider: "anthropic", Label: id, Kind: api.KindAPIKey})
		p.SetQuota(id, classify.Quota{Windows: []classify.Window{{Window: api.Window{Name: "5h", Used: float64(i%4) / 100}, Length: 5 * time.Hour}}})
	}
	req := pool.PickRequest{Provider: "anthropic", Model: "claude-sonnet-4-5"}
	b.ReportAllocs()
	for b.Loop() {
		l, err := p.Pick(req)
		if err != nil {
			b.Fatal(err)
		}
		l.Release()
	}
}

// BenchmarkMicroInspect is the body inspection every request pays before
// its first attempt (model, stream, conversation key), on a small request
// and on a Claude Code turn with a long history.
func BenchmarkMicroInspect(b *testing.B) {
	for _, size := range []int{0, 256 << 10} {
		body := microMessagesBody(size)
		b.Run(fmt.Sprintf("body=%dKiB", len(body)>>10), func(b *testing.B) {
			h := microClaudeCodeHeader()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				inspect(h, body)
			}
		})
	}
}

// BenchmarkMicroReadBody is the bounded read of the whole body that every
// request pays so that any attempt can resend it.
func BenchmarkMicroReadBody(b *testing.B) {
	body := microMessagesBody(256 << 10)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8787/v1/messages", bytes.NewReader(body))
		if _, err := readBody(httptest.NewRecorder(), r, 32<<20, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
}

// microMessagesBody is an Anthropic request with about pad bytes of history.
func microMessagesBody(pad int) []byte {
	var msgs []string
	turn := strings.Repeat("lorem ipsum dolor sit amet, ", 36) // ~1 KiB per turn
	for n := 0; n < pad; n += len(turn) + 40 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":%q}]}`, turn))
	}
	msgs = append(msgs, `{"role":"user","content":"hi"}`)
	return fmt.Appendf(nil, `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":false,"metadata":{"user_id":"user_0f3c_account__session_5f0c3a0e-0d7e-4f7e-9a55-0b8f1e7c2d11"},"messages":[%s]}`,
		strings.Join(msgs, ","))
}

// microTransport answers every request in memory with a small 200 JSON, so
// the round-trip benchmarks measure the proxy and nothing else.
type microTransport struct{ body []byte }

func (m microTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Request-Id", "req_011CWMy48MLiAUc9C2WYUgJW")
	h.Set("Anthropic-Ratelimit-Requests-Limit", "4000")
	h.Set("Anthropic-Ratelimit-Requests-Remaining", "3999")
	h.Set("Anthropic-Ratelimit-Requests-Reset", "2026-03-01T12:01:00Z")
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(bytes.NewReader(m.body)),
		ContentLength: int64(len(m.body)), Request: r, ProtoMajor: 1, ProtoMinor: 1}, nil
}

var microAnswer = []byte(`{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hello hello hello hello hello "}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":5}}`)

// microAuth is an Authenticator for API keys held in memory.
type microAuth struct{}

func (microAuth) Auth(_ context.Context, cred pool.Credential, _ bool) (auth.Auth, error) {
	return auth.Auth{Header: http.Header{"X-Api-Key": {"sk-" + cred.ID}}}, nil
}

// roundTrip serves one small JSON request through h into a recorder.
func microRoundTrip(b *testing.B, h http.Handler, body []byte) {
	hdr := microClaudeCodeHeader()
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8787/v1/messages", bytes.NewReader(body))
		r.Header = hdr.Clone()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkMicroRoundTrip is one small JSON request through the whole
// proxy in memory (guard, client key, routing, body read, pick, header
// build, classification, delivery, events into a hub) against the same
// request through a bare httputil.ReverseProxy: the in-process share of
// the added latency, without sockets.
func BenchmarkMicroRoundTrip(b *testing.B) {
	body := microMessagesBody(0)
	tr := microTransport{body: microAnswer}
	b.Run("arm=subpool", func(b *testing.B) {
		p := pool.New(clock.Real{}, pool.Config{}, nil)
		for i := range 2 {
			id := fmt.Sprintf("key-%d", i)
			p.Add(pool.Credential{ID: id, Provider: "anthropic", Label: id, Kind: api.KindAPIKey})
		}
		hub := newMicroHub(b)
		px := New(Options{
			Pool: p, Auth: microAuth{}, Events: hub, Transport: tr,
			ClientKey: func() string { return "sp-client-0123456789abcdef0123456789abcdef" },
			Providers: map[string]*Provider{"anthropic": {Name: "anthropic", Wire: "anthropic",
				BaseURL: "http://127.0.0.1:9", Profile: classify.Lookup("anthropic")}},
		})
		microRoundTrip(b, px, body)
	})
	b.Run("arm=bare", func(b *testing.B) {
		target, _ := url.Parse("http://127.0.0.1:9")
		rp := &httputil.ReverseProxy{
			Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
			FlushInterval: -1,
			BufferPool:    microBufPool{},
			Transport:     tr,
		}
		microRoundTrip(b, rp, body)
	})
}

// newMicroHub is the event hub as the app runs it, with one subscriber
// (a connected tray) draining it.
func newMicroHub(b *testing.B) *events.Hub {
	hub := events.NewHub(clock.Real{}, 0)
	sub, _ := hub.Subscribe(0, 0)
	go func() {
		for range sub.C() {
		}
	}()
	b.Cleanup(sub.Close)
	return hub
}

type microBufPool struct{}

var microBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (microBufPool) Get() []byte  { return *(microBufs.Get().(*[]byte)) }
func (microBufPool) Put(b []byte) { microBufs.Put(&b) }
