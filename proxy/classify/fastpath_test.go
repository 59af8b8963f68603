package classify

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// refParseDecimal is parseDecimal before whole numbers took Atoi: every
// value through ParseFloat.
func refParseDecimal(s string) (float64, bool) {
	if s == "" || len(s) > 24 || !isDecimal(s) || s == "." {
		return 0, false
	}
	n, err := strconv.ParseFloat(s, 64)
	return n, err == nil
}

var decimals = []string{
	"", ".", "0", "00", "007", "1", "49", "38000", "1788586800", "0.11", "1.08", ".5", "5.", "1..2",
	"-1", "+1", "1e3", "NaN", "Inf", " 1", "1 ", "0x10", "1_000",
	"999999999999999",  // 15 digits: the last read by Atoi
	"9007199254740993", // 2^53+1: ParseFloat rounds it
	"123456789012345678901234", "1234567890123456789012345",
	"18446744073709551616", "000000000000000000000001",
}

func TestParseDecimalWholeNumbers(t *testing.T) {
	for _, s := range decimals {
		n, ok := parseDecimal(s)
		if rn, rok := refParseDecimal(s); n != rn || ok != rok {
			t.Errorf("parseDecimal(%q) = %v %v, ParseFloat reads %v %v", s, n, ok, rn, rok)
		}
	}
}

func FuzzParseDecimal(f *testing.F) {
	for _, s := range decimals {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseDecimal(s)
		if rn, rok := refParseDecimal(s); n != rn || ok != rok {
			t.Fatalf("parseDecimal(%q) = %v %v, ParseFloat reads %v %v", s, n, ok, rn, rok)
		}
	})
}

func TestIsASCII(t *testing.T) {
	for n := 0; n <= 24; n++ {
		s := strings.Repeat("a", n)
		if !isASCII(s) {
			t.Errorf("isASCII(%q) = false", s)
		}
		for i := 0; i < n; i++ {
			for _, c := range []byte{0x80, 0xC2, 0xFF} {
				b := []byte(s)
				b[i] = c
				if isASCII(string(b)) {
					t.Errorf("isASCII(%q) = true", b)
				}
			}
		}
	}
}

// An answer's buckets often share one reset text, which ReadWindows parses
// once; each bucket must still get its own reset, and the same text in
// another family is read as that family reads it.
func TestReadWindowsSharedResets(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	h := http.Header{}
	for k, v := range map[string]string{
		"Anthropic-Ratelimit-Requests-Limit": "50", "Anthropic-Ratelimit-Requests-Remaining": "49",
		"Anthropic-Ratelimit-Requests-Reset": "2026-03-01T12:01:00Z",
		"Anthropic-Ratelimit-Tokens-Limit":   "100", "Anthropic-Ratelimit-Tokens-Remaining": "50",
		"Anthropic-Ratelimit-Tokens-Reset":       "2026-03-01T12:00:31Z",
		"Anthropic-Ratelimit-Input-Tokens-Limit": "100", "Anthropic-Ratelimit-Input-Tokens-Remaining": "25",
		"Anthropic-Ratelimit-Input-Tokens-Reset":  "2026-03-01T12:00:31Z",
		"Anthropic-Ratelimit-Output-Tokens-Limit": "100", "Anthropic-Ratelimit-Output-Tokens-Remaining": "100",
		"Anthropic-Ratelimit-Output-Tokens-Reset": "bad",
		"X-Ratelimit-Limit-Requests":              "10", "X-Ratelimit-Remaining-Requests": "5",
		"X-Ratelimit-Reset-Requests": "2026-03-01T12:00:31Z", // no duration: no reset
		"X-Ratelimit-Limit-Tokens":   "10", "X-Ratelimit-Remaining-Tokens": "5",
		"X-Ratelimit-Reset-Tokens": "6m0s",
	} {
		h.Set(k, v)
	}
	want := map[string]string{
		"requests": "2026-03-01T12:01:00Z", "tokens": "2026-03-01T12:00:31Z", "input_tokens": "2026-03-01T12:00:31Z",
		"output_tokens": "", // its reset does not parse
	}
	for range 20 { // map order varies: the buckets come in every order
		q, ok := ReadWindows(h, now)
		if !ok || len(q.Windows) != 6 {
			t.Fatalf("windows %+v", q.Windows)
		}
		openai := 0
		for _, w := range q.Windows {
			got := ""
			if w.ResetsAt != nil {
				got = w.ResetsAt.Format(time.RFC3339)
			}
			switch {
			case w.Name == "requests" && w.Used == 0.5:
				openai++
				if got != "" {
					t.Errorf("OpenAI requests resets %s, want none", got)
				}
			case w.Name == "tokens" && w.Used == 0.5 && got == now.Add(6*time.Minute).Format(time.RFC3339):
				openai++
			case got != want[w.Name]:
				t.Errorf("%s (used %v) resets %q, want %q", w.Name, w.Used, got, want[w.Name])
			}
		}
		if openai != 2 {
			t.Errorf("OpenAI buckets misread: %+v", q.Windows)
		}
	}
}
