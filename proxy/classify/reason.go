package classify

import (
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxQuote is how much of the upstream's message a reason quotes.
const maxQuote = 120

// maxWord is the longest word quoted; a longer one is no prose but a
// token or a blob, shown as "[…]".
const maxWord = 96

// buildReason builds the line a person reads in the tray:
//
//	429 rate_limit_error: account rate limit — This request would exceed…
//	stream error server_is_overloaded: servers overloaded — Our servers…
func buildReason(status int, stream bool, code, why, msg string) string {
	var b strings.Builder
	if stream {
		b.WriteString("stream error")
	} else {
		b.WriteString(strconv.Itoa(status))
	}
	if code != "" {
		b.WriteString(" ")
		b.WriteString(token(code, 48))
	} else if t := http.StatusText(status); t != "" && !stream {
		b.WriteString(" ")
		b.WriteString(t)
	}
	b.WriteString(": ")
	b.WriteString(why)
	if q := quote(msg, maxQuote); q != "" {
		b.WriteString(" — ")
		b.WriteString(q)
	}
	return b.String()
}

// token copies an identifier, printable ASCII only, cut at max bytes.
func token(s string, max int) string {
	cut := len(s) > max
	if cut {
		s = s[:max]
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x21 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
	if cut {
		s += "…"
	}
	return s
}

// quote renders the upstream's message on one line: whitespace and
// control characters folded to single spaces, anything that looks like a
// key or token replaced by "[redacted]" (OpenAI echoes the tail of a wrong
// key), cut at max bytes on a word boundary.
func quote(msg string, max int) string {
	words := strings.FieldsFunc(strings.ToValidUTF8(msg, "\uFFFD"), func(r rune) bool {
		return r <= ' ' || r == 0x7f || r == 0x85 || r == 0xa0
	})
	var b strings.Builder
	afterBearer := false
	for _, w := range words {
		bearer := strings.EqualFold(w, "bearer")
		switch {
		case len(w) > maxWord:
			w = "[…]"
		case afterBearer || looksSecret(w):
			w = "[redacted]"
		}
		afterBearer = bearer
		need := len(w)
		if b.Len() > 0 {
			need++
		}
		if b.Len()+need > max {
			// Cut the word itself only when it alone overflows;
			// otherwise end on a whole word.
			if b.Len() == 0 {
				b.WriteString(w[:runeCut(w, max)])
			}
			b.WriteString("…")
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// looksSecret: API keys (sk-…, sk-ant-…), JWTs (eyJ…), masked keys (****),
// Google API keys (AIza…, which Google echoes as "Consumer
// 'api_key:AIza…'") and Google access tokens (ya29.…).
func looksSecret(w string) bool {
	return strings.HasPrefix(w, "sk-") || strings.HasPrefix(w, "sk_") || strings.HasPrefix(w, "eyJ") ||
		strings.Contains(w, "***") || strings.Contains(w, "AIza") || strings.Contains(w, "ya29.")
}

// runeCut returns the largest n <= max that ends on a rune boundary.
func runeCut(w string, max int) int {
	if len(w) <= max {
		return len(w)
	}
	n := max
	for n > 0 && !utf8.RuneStart(w[n]) {
		n--
	}
	return n
}
