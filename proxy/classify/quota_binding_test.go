package classify

import (
	"net/http"
	"testing"
	"time"
)

// A subscription's answer may carry the API's per-minute buckets beside
// its plan windows; with no representative claim, the fullest bucket must
// not be named the binding window: the plan's windows are what limit it.
func TestBindingPrefersPlanWindowsOverBuckets(t *testing.T) {
	now := time.Unix(1788570000, 0)
	h := http.Header{}
	h.Set("anthropic-ratelimit-unified-5h-utilization", "0.4")
	h.Set("anthropic-ratelimit-unified-5h-reset", "1788586800")
	h.Set("anthropic-ratelimit-unified-7d-utilization", "0.2")
	h.Set("anthropic-ratelimit-unified-7d-reset", "1788937200")
	h.Set("anthropic-ratelimit-requests-limit", "50")
	h.Set("anthropic-ratelimit-requests-remaining", "1")
	q, ok := ReadWindows(h, now)
	if !ok || len(q.Windows) != 3 {
		t.Fatalf("windows %+v", q.Windows)
	}
	if w, _ := bindingOf(q); w.Name != "5h" {
		t.Fatalf("binding %q, want 5h", w.Name)
	}
	// An API key's buckets alone: the fullest binds.
	h = http.Header{}
	h.Set("anthropic-ratelimit-requests-limit", "50")
	h.Set("anthropic-ratelimit-requests-remaining", "1")
	h.Set("anthropic-ratelimit-tokens-limit", "1000")
	h.Set("anthropic-ratelimit-tokens-remaining", "900")
	q, _ = ReadWindows(h, now)
	if w, _ := bindingOf(q); w.Name != "requests" {
		t.Fatalf("API key binding %q, want requests", w.Name)
	}
}

// bindingOf returns the window finish marked binding, if any.
func bindingOf(q Quota) (Window, bool) {
	for _, w := range q.Windows {
		if w.Binding {
			return w, true
		}
	}
	return Window{}, false
}
