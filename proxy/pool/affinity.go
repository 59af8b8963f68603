package pool

import (
	"strings"
	"time"
)

// affinity remembers which credential each conversation last used, so its
// requests keep hitting one upstream account and its prompt cache. It is
// bounded: entries idle longer than idle are forgotten, and at max entries
// the least recently used of a small sample makes room. Guarded by Pool.mu.
type affinity struct {
	m     map[affKey]*affEntry
	max   int
	idle  time.Duration
	swept time.Time
}

// affKey is scoped by provider, so a key that reaches two providers keeps
// one credential on each instead of re-binding back and forth.
type affKey struct{ provider, key string }

// affEntry is a pointer in the map so that refreshing it does not
// reassign the key: Go overwrites a string key on assignment, which would
// make the map retain whatever buffer the caller's string points into.
type affEntry struct {
	c    *cred
	last time.Time
}

const (
	// sweepEvery bounds how often a full map hits a scan for idle entries.
	sweepEvery = time.Minute
	// evictSample is how many entries are looked at to find one to evict:
	// approximate LRU at constant cost, as Redis does.
	evictSample = 8
)

func newAffinity(max int, idle time.Duration) affinity {
	return affinity{m: map[affKey]*affEntry{}, max: max, idle: idle}
}

func (a *affinity) lookup(provider, key string) *affEntry {
	return a.m[affKey{provider, key}]
}

// usable reports whether the entry still names a live credential of
// provider and has been used within idle.
func (e *affEntry) usable(provider string, now time.Time, idle time.Duration) bool {
	return !e.c.removed && (provider == "" || e.c.Provider == provider) && now.Sub(e.last) < idle
}

// bind adds a key not yet in the map.
func (a *affinity) bind(provider, key string, c *cred, now time.Time) {
	if len(a.m) >= a.max {
		a.evict(now)
	}
	// Cloned: the key is often cut out of a request body, and holding the
	// substring would hold the whole body for an hour.
	a.m[affKey{strings.Clone(provider), strings.Clone(key)}] = &affEntry{c: c, last: now}
}

func (a *affinity) evict(now time.Time) {
	if now.Sub(a.swept) >= sweepEvery {
		a.swept = now
		for k, e := range a.m {
			if e.c.removed || now.Sub(e.last) >= a.idle {
				delete(a.m, k)
			}
		}
	}
	for len(a.m) >= a.max {
		var oldest affKey
		var at time.Time
		n := 0
		for k, e := range a.m { // map order is random: a random sample
			if n == 0 || e.last.Before(at) {
				oldest, at = k, e.last
			}
			if n++; n == evictSample {
				break
			}
		}
		delete(a.m, oldest)
	}
}
