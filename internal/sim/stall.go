package sim

import (
	"context"
	"sync"
)

// Stalls plays an upstream that stops sending mid-answer: its Hook, set
// as Options.BeforeEvent, holds a named credential's stream before one of
// its events until the client gives up on it (or Close runs). The 200 and
// the SSE headers have already gone out, as real upstreams send them
// first; nothing else arrives.
//
// The zero value stalls nothing and is ready to use.
type Stalls struct {
	mu     sync.Mutex
	at     map[string]int // credential: the event index to stall before
	next   BeforeEventFunc
	stalls int
}

// BeforeEventFunc is the type of Options.BeforeEvent.
type BeforeEventFunc = func(ctx context.Context, ev Event) error

// StallAt makes every stream of credential stall before its event at
// index (0: nothing after the headers). A negative index stops stalling.
func (s *Stalls) StallAt(credential string, index int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[string]int{}
	}
	if index < 0 {
		delete(s.at, credential)
		return
	}
	s.at[credential] = index
}

// Then runs next for every event that does not stall (another gate of
// the test's own).
func (s *Stalls) Then(next BeforeEventFunc) {
	s.mu.Lock()
	s.next = next
	s.mu.Unlock()
}

// Count is how many streams have stalled so far.
func (s *Stalls) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalls
}

// Hook is the Options.BeforeEvent that plays the stalls.
func (s *Stalls) Hook(ctx context.Context, ev Event) error {
	s.mu.Lock()
	at, ok := s.at[ev.Credential]
	next := s.next
	stall := ok && at == ev.Index
	if stall {
		s.stalls++
	}
	s.mu.Unlock()
	if stall {
		<-ctx.Done()
		return ctx.Err()
	}
	if next != nil {
		return next(ctx, ev)
	}
	return nil
}
