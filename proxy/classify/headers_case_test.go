package classify

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The family headers are read ignoring case, without lower-case copies of
// the keys (headerState.read): a map built by hand, in any spelling, must
// read as net/http's canonical one, and as the same map with every key in
// lower case.
func TestReadWindowsKeyCase(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	kvs := [][2]string{
		{"Date", "Sun, 01 Mar 2026 12:00:30 GMT"},
		{"Anthropic-Ratelimit-Requests-Limit", "50"},
		{"Anthropic-Ratelimit-Requests-Remaining", "49"},
		{"Anthropic-Ratelimit-Requests-Reset", "2026-03-01T12:01:00Z"},
		{"Anthropic-Ratelimit-Input-Tokens-Limit", "40000"},
		{"Anthropic-Ratelimit-Input-Tokens-Remaining", "38000"},
		{"Anthropic-Ratelimit-Input-Tokens-Reset", "2026-03-01T12:00:31Z"},
		{"Anthropic-Ratelimit-Unified-7d-Sonnet-Utilization", "0.5"},
		{"Anthropic-Ratelimit-Unified-Overage-Status", "allowed"},
		{"Anthropic-Ratelimit-Unified-Representative-Claim", "five_hour"},
		{"X-Ratelimit-Remaining-Tokens", "10"},
		{"X-Ratelimit-Limit-Tokens", "100"},
		{"X-Ratelimit-Reset-Tokens", "6m0s"},
		{"X-Codex-Bengalfox-Primary-Used-Percent", "80"},
		{"X-Codex-Bengalfox-Limit-Name", "GPT-5.2-Codex-Sonic"},
		{"X-Codex-Secondary-Used-Percent", "10"},
		{"X-Codex-Secondary-Window-Minutes", "10080"},
		{"X-Codex-Plan-Type", "plus"},
	}
	build := func(spell func(string) string) http.Header {
		h := http.Header{}
		for _, kv := range kvs {
			h[spell(kv[0])] = []string{kv[1]}
		}
		return h
	}
	want, ok := ReadWindows(build(func(k string) string { return k }), now)
	if !ok || len(want.Windows) != 6 {
		t.Fatalf("canonical keys: %v %+v", ok, want.Windows)
	}
	spellings := map[string]func(string) string{
		"lower": strings.ToLower,
		"upper": strings.ToUpper,
		// The family's prefix as net/http spells it, the rest not:
		// file compares that spelling first, then folds.
		"canonical prefix": func(k string) string {
			i := strings.Index(k, "-")
			j := strings.Index(k[i+1:], "-")
			return k[:i+j+2] + strings.ToUpper(k[i+j+2:])
		},
		"mixed": func(k string) string {
			b := []byte(strings.ToLower(k))
			for i := 0; i < len(b); i += 3 {
				b[i] = strings.ToUpper(string(b[i]))[0]
			}
			return string(b)
		},
	}
	for name, spell := range spellings {
		if got, _ := ReadWindows(build(spell), now); !reflect.DeepEqual(got, want) {
			t.Errorf("%s keys:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

// Keys with letters beyond ASCII read as strings.ToLower spells them: the
// Kelvin sign lowers to k, the long s stays itself and is no s.
func TestReadWindowsNonASCIIKeys(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	h := http.Header{
		"anthropic-ratelimit-to\u212aens-limit":       {"100"},
		"anthropic-ratelimit-tokens-remaining":        {"25"},
		"anthropic-ratelimit-reque\u017fts-limit":     {"10"},
		"ANTHROPIC-RATELIMIT-REQUE\u017fTS-REMAINING": {"5"},
		"anthropic-ratelimit-requests-remaining":      {"1"},
	}
	q, _ := ReadWindows(h, now)
	var names []string
	for _, w := range q.Windows {
		names = append(names, fmt.Sprintf("%s=%v", w.Name, w.Used))
	}
	if got, want := strings.Join(names, " "), "reque\u017fts=0.5 tokens=0.75"; got != want {
		t.Fatalf("windows %q, want %q", got, want)
	}
}

// More windows than headerState has room for are all read, each header
// filed with its own window.
func TestReadWindowsManyWindows(t *testing.T) {
	now := time.Unix(1788570000, 0)
	h := http.Header{}
	var hs headerState
	n := 3 * len(hs.room)
	for i := 1; i <= n; i++ {
		h.Set(fmt.Sprintf("anthropic-ratelimit-unified-%dh-utilization", i), fmt.Sprintf("0.%02d", i))
		h.Set(fmt.Sprintf("anthropic-ratelimit-unified-%dh-reset", i), fmt.Sprint(now.Unix()+int64(i)))
	}
	q, ok := ReadWindows(h, now)
	if !ok || len(q.Windows) != n {
		t.Fatalf("%d windows, want %d", len(q.Windows), n)
	}
	for i, w := range q.Windows {
		k := i + 1
		if w.Name != fmt.Sprintf("%dh", k) || w.Used != float64(k)/100 || w.ResetsAt == nil || !w.ResetsAt.Equal(now.Add(time.Duration(k)*time.Second)) {
			t.Errorf("window %d: %+v", i, w)
		}
	}
	// A refusal reads the same headers for its reset.
	v := Classify(Lookup("anthropic"), Response{Status: 429, Header: h}, now)
	if want := time.Duration(n) * time.Second; v.RetryAfter != want {
		t.Errorf("retry after %v, want %v", v.RetryAfter, want)
	}
}
