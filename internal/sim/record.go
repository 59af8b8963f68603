package sim

import (
	"context"
	"net/http"
	"time"
)

// Record is one request as the sim saw it.
type Record struct {
	Credential string // the secret seen, "" when none
	Path       string // URL path, without the query
	Query      string // raw query ("beta=true" from Claude Code)
	Model      string
	Stream     bool
	Time       time.Time // arrival, on Options.Clock
	// Status is what the sim chose to answer, known from arrival; 0 for
	// Drop. When Cancelled is set the client may never have seen it.
	Status int
	Header http.Header // request headers as received; nil with DiscardBodies
	Body   []byte      // request body; nil with DiscardBodies
	// Cancelled is set when the client went away (or Close ran) before the
	// sim finished its answer.
	Cancelled bool
}

// Requests returns the records in arrival order. The slice is a copy; the
// Header and Body inside are shared and must not be modified.
func (s *Server) Requests() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.records...)
}

// Calls counts the requests that carried credential since New or Reset,
// whatever they were answered.
func (s *Server) Calls(credential string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs := s.creds[credential]; cs != nil {
		return cs.calls
	}
	return 0
}

// Reset forgets records and every per-credential setting: scripts, quotas
// and their windows, utilization. Requests still in flight finish but are
// not recorded.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = nil
	s.creds = map[string]*credState{}
	s.resetGoogleLocked()
	s.cancelled = 0
	s.gen++
	s.notifyLocked()
}

// WaitRequests returns once at least n requests have arrived (since New or
// Reset), or with ctx's error.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	return s.waitFor(ctx, func() bool { return len(s.records) >= n })
}

// WaitCancelled returns once at least n requests have seen their client
// leave before the sim finished, or with ctx's error.
func (s *Server) WaitCancelled(ctx context.Context, n int) error {
	return s.waitFor(ctx, func() bool { return s.cancelled >= n })
}

func (s *Server) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok := cond()
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// notifyLocked wakes every waiter; they re-check their condition.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// record stores the request with the status the sim chose for it. Every
// path calls it before any wait, so WaitRequests sees a request (and its
// status) while a scripted delay still holds the answer.
func (x *exchange) record(status int) {
	s := x.s
	if s.opts.NoRecords {
		s.mu.Lock()
		defer s.mu.Unlock()
		if x.cred != "" {
			s.credLocked(x.cred).calls++
		}
		return
	}
	rec := Record{
		Credential: x.cred,
		Path:       x.r.URL.Path,
		Query:      x.r.URL.RawQuery,
		Model:      x.req.Model,
		Stream:     x.req.Stream,
		Time:       s.clk.Now(),
		Status:     status,
	}
	if !s.opts.DiscardBodies {
		rec.Header = x.r.Header.Clone()
		rec.Body = x.body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x.gen, x.idx, x.recorded = s.gen, len(s.records), true
	s.records = append(s.records, rec)
	if x.cred != "" {
		s.credLocked(x.cred).calls++
	}
	s.notifyLocked()
}

// finish marks the record cancelled when the answer did not complete
// because the client left. A cut made by the sim itself is not a cancel.
func (x *exchange) finish() {
	if !x.recorded || x.done {
		return
	}
	if x.ctx.Err() == nil && !x.clientGone {
		return
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if x.gen != s.gen {
		return
	}
	s.records[x.idx].Cancelled = true
	s.cancelled++
	s.notifyLocked()
}
