package codeassist

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const token = "ya29.a0AfB_secret-access-token"

// call is one request the fake Code Assist saw.
type call struct {
	Method, Path, Auth string
	Body               string
}

// answer is what the fake says to one call: a status and a JSON body.
type answer struct {
	status int
	body   string
}

// fake is a Code Assist endpoint that answers each method from a script,
// in order (the last answer repeats), and records every call.
type fake struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	script  map[string][]answer // by "loadCodeAssist", "onboardUser", "retrieveUserQuota", "GET operations/…"
	calls   []call
	counter map[string]int
}

func newFake(t *testing.T) *fake {
	f := &fake{t: t, script: map[string][]answer{}, counter: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) on(key string, as ...answer) *fake {
	f.mu.Lock()
	f.script[key] = as
	f.mu.Unlock()
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	key := ""
	switch {
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1internal:"):
		key = strings.TrimPrefix(r.URL.Path, "/v1internal:")
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1internal/"):
		key = "GET " + strings.TrimPrefix(r.URL.Path, "/v1internal/")
	}
	f.mu.Lock()
	f.calls = append(f.calls, call{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: string(b)})
	as := f.script[key]
	n := f.counter[key]
	f.counter[key]++
	f.mu.Unlock()
	if r.Method == http.MethodPost && r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, `{"error":{"code":400,"message":"bad content type","status":"INVALID_ARGUMENT"}}`, 400)
		return
	}
	if len(as) == 0 {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}`)
		return
	}
	a := as[min(n, len(as)-1)]
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func (f *fake) seen() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func (f *fake) client(clk clock.Clock) *Client {
	return &Client{HTTP: f.srv.Client(), Endpoint: f.srv.URL, Clock: clk}
}

// sameJSON fails unless got and want are one JSON value.
func sameJSON(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: not JSON: %s", what, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

// guard ends a test that deadlocked; it is no timing assertion.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
