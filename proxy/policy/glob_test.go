package policy

import "testing"

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"claude-opus-*", "claude-opus-4-1", true},
		{"claude-opus-*", "claude-opus-", true},
		{"claude-opus-*", "claude-sonnet-4", false},
		{"*haiku*", "claude-3-5-haiku-latest", true},
		{"*-mini", "o4-mini", true},
		{"*-mini", "gemini", false},
		{"*-mini-*", "gpt-5.1-codex-mini-2025", true},
		{"gpt-5", "gpt-5", true},
		{"gpt-5", "gpt-5.1", false},
		{"a*b*b", "abb", true},
		{"a*b*b", "ab", false},
		{"*", "", true},
		{"openai/*", "openai/gpt-5", true},
	} {
		if got := Glob(tc.pattern, tc.s); got != tc.want {
			t.Errorf("Glob(%q, %q) = %v", tc.pattern, tc.s, got)
		}
		// It runs on every request: no garbage.
		if n := testing.AllocsPerRun(10, func() { Glob(tc.pattern, tc.s) }); n != 0 {
			t.Errorf("Glob(%q, %q) allocates %v times", tc.pattern, tc.s, n)
		}
	}
}
