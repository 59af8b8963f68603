package proxy

import (
	"fmt"
	"sync"
)

// A translated request's notes (a field dropped, instructions supplied)
// follow from the client's request shape, so an editor sends the same
// shape, and would get the same line in the log, on every request. Each
// distinct line is logged once; the set is bounded, and starts over when
// full, so a line may come back after many others.
const saidMax = 256

type saidOnce struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// logf logs the formatted line through logf unless it was logged before.
func (s *saidOnce) logf(logf func(string, ...any), format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	s.mu.Lock()
	_, said := s.seen[line]
	if !said {
		if s.seen == nil || len(s.seen) >= saidMax {
			s.seen = make(map[string]struct{})
		}
		s.seen[line] = struct{}{}
	}
	s.mu.Unlock()
	if !said {
		logf("%s", line)
	}
}

// noteOnce logs a translation's notes, each distinct line once.
func (p *Proxy) noteOnce(format string, args ...any) { p.said.logf(p.o.Logf, format, args...) }
