package classify

import (
	"hash/maphash"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"
)

// maxQuote is how much of the upstream's message a reason quotes.
const maxQuote = 120

// Reason lines repeat: a pool that hits a limit has many requests refused
// in the same words, and each verdict's line goes to an event and the
// tray. A line is built once for its inputs and then shared, so a burst of
// identical refusals costs neither the quoting nor an allocation each.
//
// The table is direct-mapped, a slot per hash of the inputs: a line whose
// slot is taken replaces the one there, so it holds at most reasonSlots
// lines and costs nothing to grow. Each slot has its own lock, held for a
// few comparisons. It keeps the message's length and a seeded 64-bit hash,
// not the message: a line quotes at most maxQuote bytes with keys
// redacted, and the table must not keep more of an upstream's words than
// that. Two messages of one length and hash are as unlikely as a wrong
// byte from the network, and would only cost a line's wording, never a
// class, scope or reset time.
const (
	reasonSlots   = 256
	reasonCodeMax = 48 // longer codes are quoted cut; their lines are not kept
)

type reasonSlot struct {
	mu      sync.Mutex
	status  int
	stream  bool
	msgLen  int
	msgHash uint64
	codeLen int
	code    [reasonCodeMax]byte
	why     string
	line    string // "" while the slot is empty
}

var (
	reasonTable [reasonSlots]reasonSlot
	reasonSeed  = maphash.MakeSeed()
)

// reason returns the line for a refusal, from the table when the same
// refusal was seen before.
func reason(status int, stream bool, code []byte, why string, msg []byte) string {
	if len(code) > reasonCodeMax {
		return buildReason(status, stream, code, why, msg)
	}
	h := maphash.Bytes(reasonSeed, msg)
	s := &reasonTable[(h^uint64(status)^uint64(len(code))<<8)%reasonSlots]
	s.mu.Lock()
	if s.line != "" && s.msgHash == h && s.msgLen == len(msg) && s.status == status && s.stream == stream &&
		s.why == why && string(s.code[:s.codeLen]) == string(code) {
		line := s.line
		s.mu.Unlock()
		return line
	}
	s.mu.Unlock()
	line := buildReason(status, stream, code, why, msg)
	s.mu.Lock()
	s.status, s.stream, s.msgLen, s.msgHash, s.why, s.line = status, stream, len(msg), h, why, line
	s.codeLen = copy(s.code[:], code)
	s.mu.Unlock()
	return line
}

// buildReason builds the line a person reads in the tray:
//
//	429 rate_limit_error: account rate limit — This request would exceed…
//	stream error server_is_overloaded: servers overloaded — Our servers…
func buildReason(status int, stream bool, code []byte, why string, msg []byte) string {
	var buf [256]byte
	b := buf[:0]
	if stream {
		b = append(b, "stream error"...)
	} else {
		b = strconv.AppendInt(b, int64(status), 10)
	}
	if len(code) > 0 {
		b = append(b, ' ')
		b = appendToken(b, code, 48)
	} else if t := http.StatusText(status); t != "" && !stream {
		b = append(b, ' ')
		b = append(b, t...)
	}
	b = append(b, ": "...)
	b = append(b, why...)
	if len(msg) > 0 {
		mark := len(b)
		b = append(b, " — "...)
		start := len(b)
		b = appendQuote(b, msg, maxQuote)
		if len(b) == start {
			b = b[:mark]
		}
	}
	return string(b)
}

// appendToken copies an identifier, printable ASCII only.
func appendToken(b, tok []byte, max int) []byte {
	if len(tok) <= max && printable(tok) {
		return append(b, tok...) // the usual case, in one copy
	}
	for i, c := range tok {
		if i == max {
			return append(b, "…"...)
		}
		if c < 0x21 || c > 0x7e {
			c = '?'
		}
		b = append(b, c)
	}
	return b
}

// printable: appendToken would keep every byte of b.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// appendQuote appends the upstream's message: JSON escapes decoded,
// whitespace and control characters folded to single spaces, anything
// that looks like a key or token replaced by "[redacted]" (OpenAI echoes
// the tail of a wrong key), cut at max bytes on a word boundary.
func appendQuote(b, raw []byte, max int) []byte {
	if n, ok := plainCut(raw, max); ok {
		b = append(b, raw[:n]...)
		if n < len(raw) {
			b = append(b, "…"...)
		}
		return b
	}
	return quoteWords(b, raw, max)
}

// quoteWords is appendQuote's careful path, word by word.
func quoteWords(b, raw []byte, max int) []byte {
	q := quoter{max: max}
	for i := 0; i < len(raw) && !q.full; {
		if plainASCII(raw[i]) {
			j := i + 1
			for j < len(raw) && plainASCII(raw[j]) {
				j++
			}
			q.pushRun(raw[i:j])
			i = j
			continue
		}
		r, n := decodeJSONRune(raw, i)
		i += n
		if r <= ' ' || r == 0x7f || r == 0x85 || r == 0xa0 {
			b = q.flush(b)
			continue
		}
		var enc [utf8.UTFMax]byte
		q.pushRun(enc[:utf8.EncodeRune(enc[:], r)])
	}
	return q.flush(b)
}

// plainCut is the common case, checked in one pass: printable ASCII with
// single spaces, no escapes and nothing that looks secret. It returns how
// much of raw to quote (ending on a word) and false when the careful path
// is needed.
func plainCut(raw []byte, max int) (int, bool) {
	cut := len(raw)
	for i := 0; i < len(raw); {
		// raw[i] starts a word. Only a word led by 's', 'e' or 'b' can
		// open a key, a JWT or a bearer token; a "***" mask anywhere
		// is caught by the star count below.
		if c := raw[i]; (c == 's' || c == 'e' || c|0x20 == 'b') && secretPrefix(raw[i:min(len(raw), i+7)]) {
			return 0, false
		}
		start, stars := i, 0
	word:
		for ; i < len(raw); i++ {
			switch byteClass[raw[i]] {
			case classPlain:
				stars = 0
			case classStar:
				if stars++; stars == 3 {
					return 0, false
				}
			default:
				break word
			}
		}
		if i == start || i-start > maxWord {
			return 0, false // leading or doubled space, a stray byte, or a blob
		}
		if i == len(raw) {
			break
		}
		if raw[i] != ' ' || i == len(raw)-1 {
			return 0, false // an escape, a control byte, or a trailing space
		}
		if i <= max {
			cut = i
		}
		i++
	}
	if len(raw) <= max {
		return len(raw), true
	}
	if cut == len(raw) {
		return 0, false // one word longer than max
	}
	return cut, true
}

const (
	classOther = iota
	classPlain
	classSpace
	classStar
)

var byteClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c == ' ':
			t[c] = classSpace
		case c == '*':
			t[c] = classStar
		case plainASCII(byte(c)):
			t[c] = classPlain
		}
	}
	return t
}()

// maxWord is the longest word quoted; a longer one is no prose but a
// token or a blob, shown as "[…]".
const maxWord = 96

// quoter collects one word at a time so each can be judged whole.
type quoter struct {
	word        [maxWord]byte
	wn          int
	blob        bool // the word outgrew the buffer: no prose, a token or a blob
	out, max    int
	full        bool
	afterBearer bool
}

func (q *quoter) pushRun(run []byte) {
	if q.wn+len(run) > len(q.word) {
		q.blob = true
		return
	}
	q.wn += copy(q.word[q.wn:], run)
}

// plainASCII is a printable, unescaped, non-space byte.
func plainASCII(c byte) bool { return c > ' ' && c < 0x7f && c != '\\' }

// flush appends the word collected so far to b.
func (q *quoter) flush(b []byte) []byte {
	if (q.wn == 0 && !q.blob) || q.full {
		q.wn, q.blob = 0, false
		return b
	}
	w := q.word[:q.wn]
	switch {
	case q.blob:
		w = []byte("[…]")
		q.afterBearer = false
	case q.afterBearer || looksSecret(w):
		q.afterBearer = equalFoldBS(w, "bearer")
		w = []byte("[redacted]")
	default:
		q.afterBearer = equalFoldBS(w, "bearer")
	}
	q.wn, q.blob = 0, false
	need := len(w)
	if q.out > 0 {
		need++
	}
	if q.out+need > q.max {
		// Cut the word itself only when it alone overflows; otherwise
		// end on a whole word.
		if q.out == 0 {
			w = w[:runeCut(w, q.max)]
			b = append(b, w...)
		}
		q.full = true
		return append(b, "…"...)
	}
	if q.out > 0 {
		b = append(b, ' ')
	}
	q.out += need
	return append(b, w...)
}

// looksSecret: API keys (sk-…, sk-ant-…), JWTs (eyJ…), masked keys (****).
func looksSecret(w []byte) bool {
	if secretPrefix(w) {
		return true
	}
	stars := 0
	for _, c := range w {
		if c != '*' {
			stars = 0
		} else if stars++; stars == 3 {
			return true
		}
	}
	return false
}

// secretPrefix: w opens a key, a JWT or, with "bearer ", a token.
func secretPrefix(w []byte) bool {
	return hasPrefixBytes(w, "sk-") || hasPrefixBytes(w, "sk_") || hasPrefixBytes(w, "eyJ") ||
		len(w) >= 7 && equalFoldBS(w[:7], "bearer ")
}

// runeCut returns the largest n <= max that ends on a rune boundary.
func runeCut(w []byte, max int) int {
	if len(w) <= max {
		return len(w)
	}
	n := max
	for n > 0 && !utf8.RuneStart(w[n]) {
		n--
	}
	return n
}

// decodeJSONRune reads one rune at raw[i], decoding JSON escapes.
// Invalid input yields utf8.RuneError and always advances.
func decodeJSONRune(raw []byte, i int) (rune, int) {
	c := raw[i]
	if c != '\\' {
		if c < utf8.RuneSelf {
			return rune(c), 1
		}
		return utf8.DecodeRune(raw[i:])
	}
	if i+1 >= len(raw) {
		return utf8.RuneError, 1
	}
	switch raw[i+1] {
	case 'n', 'r', 't', 'b', 'f':
		return ' ', 2
	case 'u':
		r, ok := hex4(raw, i+2)
		if !ok {
			return utf8.RuneError, 2
		}
		if r >= 0xd800 && r < 0xdc00 && i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
			if lo, ok := hex4(raw, i+8); ok && lo >= 0xdc00 && lo < 0xe000 {
				return (r-0xd800)<<10 + (lo - 0xdc00) + 0x10000, 12
			}
		}
		if r >= 0xd800 && r < 0xe000 {
			return utf8.RuneError, 6
		}
		return r, 6
	default:
		return rune(raw[i+1]), 2
	}
}

func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
