package jsonscan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// members remembers the top-level keys of an object met so far, to find
// one met again. The wanted keys are told apart as encoding/json folds
// them, as Scan reads them: "model" and "Model" are one field to Scan and
// two to a reader that matches keys exactly, so a body holding both is
// read differently by the two. Any other key is told apart exactly.
type members struct {
	wanted uint8 // a bit per wanted key
	// few holds the other keys, unquoted, while they are few: n of them,
	// in place, so that an ordinary request allocates nothing for them.
	few  [manyMembers][]byte
	n    int
	many map[string]struct{}
}

// manyMembers is the count of other keys from which they are kept in a
// map: a request's top level has a dozen, a body made to be slow has more.
const manyMembers = 32

// again notes the key named key (one of the key constants) whose quoted
// text is quoted, and reports whether it was met before.
func (m *members) again(key string, quoted []byte) bool {
	if key != keyOther {
		bit := uint8(1) << wantedIndex(key)
		met := m.wanted&bit != 0
		m.wanted |= bit
		return met
	}
	k := unquoteKey(quoted)
	if m.many != nil {
		if _, met := m.many[string(k)]; met {
			return true
		}
		m.many[string(k)] = struct{}{}
		return false
	}
	for _, o := range m.few[:m.n] {
		if bytes.Equal(o, k) {
			return true
		}
	}
	if m.n < manyMembers {
		m.few[m.n] = k
		m.n++
		return false
	}
	m.many = make(map[string]struct{}, 2*manyMembers)
	for _, o := range m.few {
		m.many[string(o)] = struct{}{}
	}
	m.many[string(k)] = struct{}{}
	return false
}

func wantedIndex(key string) int {
	for i, k := range [...]string{keyModel, keyStream, keyMetadata, keyPromptCacheKey, keyUserID} {
		if k == key {
			return i
		}
	}
	return 7
}

// unquoteKey is a key as encoding/json decodes it: a plain one is its
// own bytes; escapes and non-ASCII bytes (invalid UTF-8 becomes U+FFFD)
// go through encoding/json.
func unquoteKey(quoted []byte) []byte {
	raw := quoted[1 : len(quoted)-1]
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			var k string
			if json.Unmarshal(quoted, &k) != nil {
				return raw
			}
			return []byte(k)
		}
	}
	return raw
}

// quoteKey names a key in a message: decoded, quoted, and cut short.
func quoteKey(quoted []byte) string {
	k := string(unquoteKey(quoted))
	if len(k) > 40 {
		n := 40
		for n > 0 && !utf8.RuneStart(k[n]) {
			n--
		}
		k = k[:n] + "…"
	}
	return strconv.Quote(k)
}
