package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode"
	"unicode/utf8"
)

// Fields are the only parts of a request body the proxy reads: the model
// and stream for routing, the two conversation keys for affinity.
type Fields struct {
	Model          string
	Stream         bool
	PromptCacheKey string
	UserID         string // metadata.user_id
	// Flaw says, when not "", why the fields cannot be trusted to be what
	// the upstream will read: the body starts with a byte-order mark, is
	// no JSON object or not one the scan could walk, names a top-level
	// member twice, or has a wanted field of the wrong type (a "model"
	// that is no string, null among them). Upstreams read such bodies
	// each in its own way (the last duplicate, the first, an error), so
	// the proxy cannot decide on them. Flaw reads as the end of a
	// sentence starting "the body ".
	Flaw string
}

// Scan reads the wanted fields of a top-level JSON object in one pass,
// decoding only their values and skipping everything else (a Claude Code
// turn carries the whole conversation: unmarshalling it cost milliseconds
// per request).
//
// For valid JSON it answers exactly what json.Unmarshal into
//
//	struct {
//		Model          string `json:"model"`
//		Stream         bool   `json:"stream"`
//		PromptCacheKey string `json:"prompt_cache_key"`
//		Metadata       struct {
//			UserID string `json:"user_id"`
//		} `json:"metadata"`
//	}
//
// would (FuzzScan here, and the proxy's FuzzInspect through every path,
// check it against that reference):
// keys match case-insensitively as encoding/json folds them, the last
// duplicate wins, null leaves a field as it was, and a wanted field of the
// wrong type makes the whole body count for nothing (ok false), because
// Unmarshal then returns an error and the proxy used to ignore the body then.
//
// The rest of the body is not validated. Where the body is malformed or
// truncated, the fields read before the scan lost its footing are kept,
// and Flaw says so; so it does for every body json.Unmarshal refuses,
// and for the ones it reads where another reader would differ
// (duplicates, a null model, a byte-order mark).
func Scan(b []byte) (f Fields, ok bool) {
	s := scanner{b: b}
	if bytes.HasPrefix(b, bom) {
		f.Flaw = "starts with a byte-order mark (U+FEFF)"
		return f, true
	}
	s.space()
	if !s.consume('{') {
		if s.i < len(s.b) {
			f.Flaw = "is not a JSON object"
		}
		return f, true
	}
	var seen members
	for more := s.firstMember(); more; more = s.nextMember() {
		start := s.i
		key := s.key()
		quoted := s.b[start:s.i]
		if !s.colon() {
			break
		}
		if f.Flaw == "" && seen.again(key, quoted) {
			f.Flaw = "has the member " + quoteKey(quoted) + " twice"
		}
		var fine bool
		switch key {
		case keyModel:
			if s.b[s.i] == 'n' && f.Flaw == "" {
				f.Flaw = `has a "model" that is null, not a string`
			}
			fine = s.stringField(&f.Model)
		case keyPromptCacheKey:
			fine = s.stringField(&f.PromptCacheKey)
		case keyStream:
			fine = s.boolField(&f.Stream)
		case keyMetadata:
			fine = s.metadata(&f.UserID)
		default:
			fine = s.skipValue()
		}
		if !fine {
			if s.mismatch && f.Flaw == "" {
				f.Flaw = wrongType[key]
			}
			break
		}
	}
	if s.bad && f.Flaw == "" {
		f.Flaw = "is not valid JSON"
	}
	return f, !s.mismatch
}

// wrongType is the flaw of a wanted field holding a value of the wrong
// type, by its key.
var wrongType = map[string]string{
	keyModel:          `has a "model" that is not a string`,
	keyStream:         `has a "stream" that is neither true nor false`,
	keyPromptCacheKey: `has a "prompt_cache_key" that is not a string`,
	keyMetadata:       `has a "metadata" that is not an object with a string "user_id"`,
}

var bom = []byte("\xEF\xBB\xBF")

// scanner walks a JSON text. Once it has stepped on something it
// cannot read it moves to the end, so every later step fails too and the
// scan unwinds without checking errors at every level.
type scanner struct {
	b        []byte
	i        int
	bad      bool // the scan stepped on something it cannot read
	mismatch bool // a wanted field held a complete value of the wrong type
}

func (s *scanner) fail() bool {
	s.i, s.bad = len(s.b), true
	return false
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) consume(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// firstMember is called just past an object's '{' and reports whether a
// member (its key's opening quote) follows.
func (s *scanner) firstMember() bool {
	s.space()
	if s.consume('}') {
		return false
	}
	return s.i < len(s.b) && s.b[s.i] == '"' || s.fail()
}

// nextMember is called after a member's value and reports whether another
// member follows.
func (s *scanner) nextMember() bool {
	s.space()
	if s.consume('}') {
		return false
	}
	if !s.consume(',') {
		return s.fail()
	}
	s.space()
	return s.i < len(s.b) && s.b[s.i] == '"' || s.fail()
}

// colon consumes the ':' between a key and its value and the space around
// it.
func (s *scanner) colon() bool {
	s.space()
	if !s.consume(':') {
		return s.fail()
	}
	s.space()
	return s.i < len(s.b) || s.fail()
}

// The keys Scan looks for, named as encoding/json folds them.
const (
	keyOther          = ""
	keyModel          = "MODEL"
	keyStream         = "STREAM"
	keyMetadata       = "METADATA"
	keyPromptCacheKey = "PROMPT_CACHE_KEY"
	keyUserID         = "USER_ID"
)

// key reads the key at s.i and names it by one of the key constants, or
// keyOther.
func (s *scanner) key() string {
	start := s.i
	if !s.skipString() {
		return keyOther
	}
	raw := s.b[start+1 : s.i-1]
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			return foldKey(s.b[start:s.i])
		}
	}
	switch len(raw) {
	case len(keyModel), len(keyStream), len(keyMetadata), len(keyPromptCacheKey), len(keyUserID):
	default:
		return keyOther
	}
	var up [len(keyPromptCacheKey)]byte
	for i, c := range raw {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		up[i] = c
	}
	return wantedKey(up[:len(raw)])
}

func wantedKey(folded []byte) string {
	for _, k := range [...]string{keyModel, keyStream, keyMetadata, keyPromptCacheKey, keyUserID} {
		if string(folded) == k {
			return k
		}
	}
	return keyOther
}

// foldKey is the slow path of key for keys with escapes or non-ASCII
// bytes: encoding/json matches a field when the keys fold equal, and its
// fold maps some non-ASCII runes onto ASCII letters ("ſtream" is stream,
// "prompt_cache_\u212aey" is prompt_cache_key), so they are unquoted and
// folded the same way, rune by rune (fold.go in encoding/json).
func foldKey(quoted []byte) string {
	var k string
	if json.Unmarshal(quoted, &k) != nil {
		return keyOther
	}
	var up [len(keyPromptCacheKey)]byte
	n := 0
	for _, r := range k {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
		} else {
			r = foldRune(r)
		}
		if r >= utf8.RuneSelf || n == len(up) {
			return keyOther
		}
		up[n] = byte(r)
		n++
	}
	return wantedKey(up[:n])
}

// foldRune is the smallest rune in r's case-folding orbit, which is how
// encoding/json folds non-ASCII runes in field names.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// stringField decodes the value at s.i into dst if it is a string; null
// leaves dst as it was.
func (s *scanner) stringField(dst *string) bool {
	switch s.b[s.i] {
	case '"':
		return s.stringValue(dst)
	case 'n':
		return s.literal("null")
	}
	return s.wrongType()
}

// boolField decodes the value at s.i into dst if it is true or false;
// null leaves dst as it was.
func (s *scanner) boolField(dst *bool) bool {
	switch s.b[s.i] {
	case 't':
		if s.literal("true") {
			*dst = true
			return true
		}
		return false
	case 'f':
		if s.literal("false") {
			*dst = false
			return true
		}
		return false
	case 'n':
		return s.literal("null")
	}
	return s.wrongType()
}

// metadata reads user_id out of the metadata object at s.i. A second
// metadata object does not clear a user_id read from the first, as
// json.Unmarshal decodes into the same struct again.
func (s *scanner) metadata(userID *string) bool {
	switch s.b[s.i] {
	case '{':
		s.i++
	case 'n':
		return s.literal("null")
	default:
		return s.wrongType()
	}
	for more := s.firstMember(); more; more = s.nextMember() {
		key := s.key()
		if !s.colon() {
			return false
		}
		var fine bool
		if key == keyUserID {
			fine = s.stringField(userID)
		} else {
			fine = s.skipValue()
		}
		if !fine {
			return false
		}
	}
	return !s.bad
}

// wrongType skips a value that cannot go into the field it is keyed to.
// If it is a whole value json.Unmarshal would have failed on it, so the
// scan stops and the body counts for nothing; if it is broken, the scan
// stops on a syntax error instead and keeps what it found.
func (s *scanner) wrongType() bool {
	if s.skipValue() {
		s.mismatch = true
	}
	return false
}

// stringValue decodes the string at s.i into dst.
func (s *scanner) stringValue(dst *string) bool {
	start := s.i
	if !s.skipString() {
		return false
	}
	quoted := s.b[start:s.i]
	for _, c := range quoted[1 : len(quoted)-1] {
		if c < ' ' || c == '\\' || c >= utf8.RuneSelf {
			// Escapes, and the U+FFFD that stands in for invalid UTF-8,
			// are left to encoding/json to get exactly right; the values
			// wanted here are short.
			var v string
			if json.Unmarshal(quoted, &v) != nil {
				return s.fail()
			}
			*dst = v
			return true
		}
	}
	*dst = string(quoted[1 : len(quoted)-1])
	return true
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return s.fail()
	}
	s.i += len(lit)
	return true
}

// skipValue moves past the value at s.i without decoding it.
func (s *scanner) skipValue() bool {
	switch s.b[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
		return s.skipNested()
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	// A number, loosely: what follows it decides whether the scan goes on.
	start := s.i
	for s.i < len(s.b) && isNumberByte(s.b[s.i]) {
		s.i++
	}
	return s.i > start || s.fail()
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// skipString moves past the string whose opening quote is at s.i.
func (s *scanner) skipString() bool {
	from := s.i + 1
	for from <= len(s.b) {
		q := bytes.IndexByte(s.b[from:], '"')
		if q < 0 {
			break
		}
		q += from
		// The quote is escaped if an odd number of backslashes precede
		// it. The run cannot reach back past from: s.b[from-1] is a quote.
		bs := q
		for bs > from && s.b[bs-1] == '\\' {
			bs--
		}
		if (q-bs)%2 == 0 {
			s.i = q + 1
			return true
		}
		from = q + 1
	}
	return s.fail()
}

// skipNested moves past the object or array whose opening bracket is at
// s.i. Brackets are counted, not matched: in valid JSON they pair up, and
// in anything else the scan only needs to end.
func (s *scanner) skipNested() bool {
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			if !s.skipString() {
				return false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return true
			}
		}
		s.i++
	}
	return s.fail()
}
