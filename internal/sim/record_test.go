package sim

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"
)

func TestRecordsCarryTheRequest(t *testing.T) {
	s, clk := startFake(t, Options{})
	post(t, s, "/v1/messages?beta=true", keyA, streaming(messagesBody), "user-agent", "claude-cli/2.1.332 (external, sdk-cli)")
	clk.Advance(time.Second)
	// An Anthropic OAuth client sends a bearer token instead of x-api-key.
	post(t, s, "/v1/messages", "", messagesBody, "Authorization", "Bearer sk-ant-oat01-x")
	post(t, s, "/backend-api/codex/responses", keyO, responseBody)

	recs := s.Requests()
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.Credential != keyA || r.Path != "/v1/messages" || r.Query != "beta=true" ||
		r.Model != "claude-opus-4-1" || !r.Stream || r.Status != 200 || r.Cancelled ||
		!r.Time.Equal(epoch) || string(r.Body) != streaming(messagesBody) ||
		r.Header.Get("user-agent") != "claude-cli/2.1.332 (external, sdk-cli)" {
		t.Errorf("first record %+v", r)
	}
	if r := recs[1]; r.Credential != "sk-ant-oat01-x" || !r.Time.Equal(epoch.Add(time.Second)) || r.Stream {
		t.Errorf("bearer record %+v", r)
	}
	if r := recs[2]; r.Credential != keyO || r.Path != "/backend-api/codex/responses" || r.Model != "gpt-5-codex" {
		t.Errorf("codex record %+v", r)
	}
	// The copy is the caller's.
	recs[0].Credential = "changed"
	if s.Requests()[0].Credential != keyA {
		t.Error("Requests returned the sim's own slice")
	}
}

func TestDiscardBodies(t *testing.T) {
	s := start(t, Options{DiscardBodies: true})
	post(t, s, "/v1/messages", keyA, messagesBody)
	if r := s.Requests()[0]; r.Body != nil || r.Header != nil || r.Model != "claude-opus-4-1" || r.Credential != keyA {
		t.Errorf("record %+v", r)
	}
}

// NoRecords keeps nothing of a request (the demo's sim ran for hours
// holding every request's headers and body), and still counts its calls.
func TestNoRecords(t *testing.T) {
	s := start(t, Options{NoRecords: true})
	post(t, s, "/v1/messages", keyA, messagesBody)
	post(t, s, "/v1/messages", keyA, messagesBody)
	if recs := s.Requests(); len(recs) != 0 || s.Calls(keyA) != 2 {
		t.Errorf("%d records, %d calls", len(recs), s.Calls(keyA))
	}
}

// A client that gives up during a scripted delay is recorded as
// cancelled, and WaitCancelled wakes for it.
func TestClientCancelDuringDelay(t *testing.T) {
	s := start(t, Options{})
	s.Script(keyA, Step{Delay: time.Hour})
	ctx, cancel := context.WithCancel(guard(t))
	errc := make(chan error, 1)
	go func() {
		resp, err := do(ctx, s, "POST", "/v1/messages", keyA, messagesBody)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if err := s.WaitRequests(guard(t), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := s.WaitCancelled(guard(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client error %v", err)
	}
	if r := s.Requests()[0]; !r.Cancelled || r.Status != 200 {
		t.Errorf("record %+v", r)
	}
}

// A client that leaves mid-stream is recorded as cancelled too.
func TestClientCancelMidStream(t *testing.T) {
	s := start(t, Options{BeforeEvent: func(ctx context.Context, ev Event) error {
		if ev.Index < 2 {
			return nil
		}
		<-ctx.Done() // hold the stream until the client leaves
		return ctx.Err()
	}})
	ctx, cancel := context.WithCancel(guard(t))
	defer cancel()
	resp := call(t, ctx, s, "POST", "/v1/responses", keyO, streaming(responseBody))
	defer resp.Body.Close()
	er := newEventReader(resp.Body)
	for range 2 {
		if _, err := er.next(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := s.WaitCancelled(guard(t), 1); err != nil {
		t.Fatal(err)
	}
	if r := s.Requests()[0]; !r.Cancelled {
		t.Errorf("record %+v", r)
	}
}

func TestWaitRequests(t *testing.T) {
	s := start(t, Options{})
	done := make(chan error, 1)
	go func() { done <- s.WaitRequests(guard(t), 2) }()
	post(t, s, "/v1/chat/completions", keyO, chatBody)
	post(t, s, "/v1/chat/completions", keyO, chatBody)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.WaitRequests(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitRequests past the count with a dead context: %v", err)
	}
	if err := s.WaitCancelled(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitCancelled with none cancelled: %v", err)
	}
}

func TestReset(t *testing.T) {
	s := start(t, Options{})
	s.Always(keyA, Overloaded())
	s.SetQuota(keyA, Quota{Requests: 1})
	s.SetUtilization(keyA, 0.5, 0.5)
	post(t, s, "/v1/messages", keyA, messagesBody)
	s.Reset()
	if len(s.Requests()) != 0 || s.Calls(keyA) != 0 {
		t.Fatal("records survived Reset")
	}
	for range 2 { // the quota of one request is gone too
		status, h, _ := post(t, s, "/v1/messages", keyA, messagesBody)
		if status != 200 || h.Get("anthropic-ratelimit-unified-status") != "" {
			t.Errorf("after Reset: %d %v", status, h)
		}
	}
	if s.Calls(keyA) != 2 {
		t.Errorf("calls %d", s.Calls(keyA))
	}
}

// Close ends requests held in a delay instead of waiting an hour for them.
func TestCloseEndsRequestsInFlight(t *testing.T) {
	s := New(Options{})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	s.Always(keyO, Step{Delay: time.Hour})
	errc := make(chan error, 1)
	go func() {
		resp, err := do(guard(t), s, "POST", "/v1/chat/completions", keyO, chatBody)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if err := s.WaitRequests(guard(t), 1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := <-errc; err == nil {
		t.Error("the client got an answer from a closed sim")
	}
	if r := s.Requests()[0]; !r.Cancelled {
		t.Errorf("record %+v", r)
	}
	s.Close() // idempotent
	if err := s.Start(); err == nil {
		t.Error("Start after Close succeeded")
	}
}

// ServeHTTP works without Start, e.g. behind httptest.NewServer.
func TestServeHTTPWithoutStart(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	if s.URL() != "" {
		t.Errorf("URL before Start: %q", s.URL())
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+keyO)
	s.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Body.Len() == 0 {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}
