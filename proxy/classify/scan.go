package classify

import "bytes"

// A small JSON reader for error bodies. It pulls the handful of fields the
// tables need (codes, a message, reset numbers) as slices of the body
// itself, so reading a refusal costs no allocation. encoding/json would be
// simpler, but decoding a typical 200-byte error into a struct costs ten
// allocations and longer than this whole package takes for a verdict, and
// the proxy classifies every refusal while the client waits. Anything that does not look like the shapes we know is
// skipped, never an error: a body we cannot read still has a status.

// Where an identifier came from; the lower, the more specific. Reasons
// show the most specific one.
const (
	rankDetails = iota // error.details.error_code (Anthropic spend cap)
	rankCode           // error.code
	rankType           // error.type
	rankTop            // top-level "error" string, "code", "codex_error_info"
	rankTopType        // top-level "type" (an SSE event's own name)
	nRanks
)

const maxIDs = 8

// fields is what an error body says, as slices of the body.
type fields struct {
	ids    [maxIDs][]byte
	idRank [maxIDs]uint8
	idSig  codeSig // of ids
	n      int

	msg     []byte
	msgRank int // lower wins; 0 means unset

	resetsAt     []byte // unix seconds (Codex usage_limit_reached)
	resetsIn     []byte // seconds (Codex)
	retryAfterMS []byte
	retryAfterS  []byte
}

// Message sources, best first.
const (
	msgError    = 1 + iota // error.message
	msgResponse            // response.error.message (Responses API)
	msgTop                 // top-level message
	msgDesc                // error_description (OAuth token endpoint)
	msgDetail              // detail / detail.message (older ChatGPT shape)
	msgText                // the body itself, when it is not JSON
)

func (f *fields) addID(b []byte, rank int) {
	if len(b) == 0 || f.n == maxIDs {
		return
	}
	f.ids[f.n] = b
	f.idRank[f.n] = uint8(rank)
	addSig(&f.idSig, b)
	f.n++
}

func (f *fields) setMsg(b []byte, rank int) {
	if len(b) == 0 {
		return
	}
	if f.msgRank == 0 || rank < f.msgRank {
		f.msg, f.msgRank = b, rank
	}
}

// primary is the most specific identifier, for the reason line.
func (f *fields) primary() []byte {
	best, bestRank := []byte(nil), nRanks
	for i := 0; i < f.n; i++ {
		r := int(f.idRank[i])
		if r < bestRank && !isGenericID(f.ids[i]) {
			best, bestRank = f.ids[i], r
		}
	}
	return best
}

// isGenericID is an identifier that names nothing: Anthropic's top-level
// "type":"error", or a numeric HTTP status some servers echo as a code.
func isGenericID(b []byte) bool {
	if string(b) == "error" {
		return true
	}
	return len(b) == 3 && isDigits(b)
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// parse reads an error body into f, which is zero. A body that is not a
// JSON object keeps its leading text as the message, unless it is HTML
// (a proxy's error page says nothing a person should read in the tray).
// f is filled in place: fields is a few hundred bytes, and returning it
// by value copies them.
func (f *fields) parse(b []byte) {
	i := skipWS(b, 0)
	if i < len(b) && b[i] == '{' {
		f.root(b, i)
		return
	}
	if i < len(b) && b[i] != '<' {
		f.setMsg(b[i:], msgText)
	}
}

func (f *fields) root(b []byte, i int) {
	it := iter{b: b, i: i}
	for {
		k, v, ok := it.next()
		if !ok {
			return
		}
		end := -1
		switch string(k) {
		case "error":
			if v < len(b) && b[v] == '{' {
				end = f.errObj(b, v, msgError, 0, false)
			} else {
				var s []byte
				s, end = scalar(b, v)
				f.addID(s, rankTop)
			}
		case "code", "codex_error_info", "error_code":
			var s []byte
			s, end = scalar(b, v)
			f.addID(s, rankTop)
		case "type":
			var s []byte
			s, end = scalar(b, v)
			f.addID(s, rankTopType)
		case "message", "msg":
			var s []byte
			s, end = scalar(b, v)
			f.setMsg(s, msgTop)
		case "error_description":
			var s []byte
			s, end = scalar(b, v)
			f.setMsg(s, msgDesc)
		case "detail":
			if v < len(b) && b[v] == '{' {
				end = f.errObj(b, v, msgDetail, 0, false)
			} else {
				var s []byte
				s, end = scalar(b, v)
				f.setMsg(s, msgDetail)
			}
		case "response":
			end = f.responseObj(b, v)
		case "resets_at", "resets_in_seconds", "retry_after_ms", "retry_after":
			var s []byte
			s, end = scalar(b, v)
			f.setNumber(k, s)
		default:
			end = skipValue(b, v)
		}
		if !it.advance(end) {
			return
		}
	}
}

// errObj reads an error object: OpenAI/Anthropic/z.ai all put type, code
// and message here; Codex adds its reset fields; Anthropic's spend cap
// hides its code under details.
func (f *fields) errObj(b []byte, i, msgRank, depth int, details bool) int {
	it := iter{b: b, i: i}
	for {
		k, v, ok := it.next()
		if !ok {
			return it.end()
		}
		end := -1
		switch string(k) {
		case "type":
			var s []byte
			s, end = scalar(b, v)
			f.addID(s, rankType)
		case "code", "error_code":
			var s []byte
			s, end = scalar(b, v)
			if details {
				f.addID(s, rankDetails)
			} else {
				f.addID(s, rankCode)
			}
		case "message":
			if v < len(b) && b[v] == '{' && depth == 0 {
				// {"error":{"message":{"code":…,"message":…}}}: a relay
				// wrapped the real error one level down.
				end = f.errObj(b, v, msgRank, depth+1, false)
			} else {
				var s []byte
				s, end = scalar(b, v)
				f.setMsg(s, msgRank)
			}
		case "details":
			if v < len(b) && b[v] == '{' && depth == 0 {
				end = f.errObj(b, v, msgRank, depth+1, true)
			} else {
				end = skipValue(b, v)
			}
		case "resets_at", "resets_in_seconds", "retry_after_ms", "retry_after":
			var s []byte
			s, end = scalar(b, v)
			f.setNumber(k, s)
		default:
			end = skipValue(b, v)
		}
		if !it.advance(end) {
			return it.end()
		}
	}
}

// responseObj reads a Responses API response object for its error.
func (f *fields) responseObj(b []byte, i int) int {
	if i >= len(b) || b[i] != '{' {
		return skipValue(b, i)
	}
	it := iter{b: b, i: i}
	for {
		k, v, ok := it.next()
		if !ok {
			return it.end()
		}
		var end int
		if string(k) == "error" && v < len(b) && b[v] == '{' {
			end = f.errObj(b, v, msgResponse, 0, false)
		} else {
			end = skipValue(b, v)
		}
		if !it.advance(end) {
			return it.end()
		}
	}
}

func (f *fields) setNumber(k, s []byte) {
	switch string(k) {
	case "resets_at":
		f.resetsAt = s
	case "resets_in_seconds":
		f.resetsIn = s
	case "retry_after_ms":
		f.retryAfterMS = s
	case "retry_after":
		f.retryAfterS = s
	}
}

// iter walks the members of one object. next returns each key and the
// index where its value starts; the caller reads or skips the value and
// hands the index after it to advance.
type iter struct {
	b       []byte
	i       int
	started bool
	closed  bool
}

func (it *iter) next() (key []byte, v int, ok bool) {
	b := it.b
	if it.closed {
		return nil, 0, false
	}
	i := skipWS(b, it.i)
	if !it.started {
		if i >= len(b) || b[i] != '{' {
			return nil, 0, false
		}
		it.started = true
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			it.i, it.closed = i+1, true
			return nil, 0, false
		}
	} else {
		if i >= len(b) {
			return nil, 0, false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			it.i, it.closed = i+1, true
			return nil, 0, false
		default:
			return nil, 0, false
		}
	}
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	ke, okStr := scanString(b, i)
	if !okStr {
		return nil, 0, false
	}
	key = b[i+1 : ke-1]
	i = skipWS(b, ke)
	if i >= len(b) || b[i] != ':' {
		return nil, 0, false
	}
	it.i = skipWS(b, i+1)
	return key, it.i, true
}

func (it *iter) advance(end int) bool {
	if end < 0 || end < it.i {
		return false
	}
	it.i = end
	return true
}

// end is where the object stopped being read; after a clean close, the
// byte after its brace.
func (it *iter) end() int {
	if it.closed {
		return it.i
	}
	return -1
}

func skipWS(b []byte, i int) int {
	// Bodies are mostly compact: one comparison settles that.
	if i < len(b) && b[i] > ' ' {
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString reads the string whose opening quote is at b[i]. It returns
// the index after the closing quote.
func scanString(b []byte, i int) (end int, ok bool) {
	j := i + 1
	for {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return len(b), false
		}
		q += j
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for k := q - 1; k > i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
}

// scalar returns a string's raw content or a bare token (number, true,
// false); null and containers give nil. end is -1 when the value is
// malformed.
func scalar(b []byte, i int) (s []byte, end int) {
	if i >= len(b) {
		return nil, -1
	}
	switch b[i] {
	case '"':
		e, ok := scanString(b, i)
		if !ok {
			return nil, -1
		}
		return b[i+1 : e-1], e
	case '{', '[':
		return nil, skipValue(b, i)
	}
	e := skipValue(b, i)
	if e < 0 {
		return nil, -1
	}
	tok := b[i:e]
	if string(tok) == "null" {
		return nil, e
	}
	return tok, e
}

// maxDepth bounds nesting in skipped values; deeper bodies are not worth
// reading and a hostile one must not cost more than a linear pass.
const maxDepth = 64

// skipValue returns the index after the value at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		e, ok := scanString(b, i)
		if !ok {
			return -1
		}
		return e
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				e, ok := scanString(b, i)
				if !ok {
					return -1
				}
				i = e
				continue
			case '{', '[':
				depth++
				if depth > maxDepth {
					return -1
				}
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// topType returns an object's top-level "type" and whether it has a
// non-null "error" member, reading nothing else. The stream path uses it
// to wave ordinary events through without parsing their content.
func topType(b []byte) (typ []byte, hasError bool) {
	it := iter{b: b, i: skipWS(b, 0)}
	for {
		k, v, ok := it.next()
		if !ok {
			return typ, hasError
		}
		end := -1
		switch string(k) {
		case "type":
			typ, end = scalar(b, v)
		case "error", "codex_error_info":
			// codex_error_info: a relayed Codex failure can arrive as a
			// bare {"message":…,"codex_error_info":"server_overloaded"}.
			if v < len(b) && b[v] != 'n' {
				hasError = true
			}
			end = skipValue(b, v)
		default:
			end = skipValue(b, v)
		}
		if !it.advance(end) {
			return typ, hasError
		}
	}
}
