package goodput

import (
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/pool"
)

// A Tweak is a proposed change to subpool's policy, played on the same
// real pool and classifier to measure what it would buy before anyone
// writes it into the proxy. The report shows these rows apart, as
// "what if"; no target is judged on them.
type Tweak struct {
	init func(s *subpool) any
	// hold returns the credentials to keep out of this pick (hard: they
	// count as busy, the request waits for a slot) and, optionally, the
	// ones to try first (prefer).
	hold func(s *subpool, model string) (hard, prefer map[string]bool)
	// leased sees every attempt's lease before the attempt is sent.
	leased func(s *subpool, l *pool.Lease)
	// answered sees every answer and its verdict before the loop acts,
	// and may change the verdict.
	answered func(s *subpool, l *pool.Lease, a answer, v *classify.Verdict)
}

// Proposal is a what-if strategy and the scenarios it is about.
type Proposal struct {
	Strategy
	Scenarios []string
}

// Proposals are the changes docs/benchmarks.md's findings propose. The
// last two (a request budget per key, the soonest reset first) are built
// into the pool now, so there is none to measure.
func Proposals() []Proposal { return nil }

func union(a, b map[string]bool) map[string]bool {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
