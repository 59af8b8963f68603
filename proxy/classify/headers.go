package classify

import (
	"net/http"
	"strings"
	"time"
)

// Rate-limit headers come in families, each describing some windows:
//
//	anthropic-ratelimit-unified-{W}-{status,reset,utilization}   subscriptions; reset in unix seconds
//	anthropic-ratelimit-unified-{status,reset,representative-claim}
//	anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{remaining,reset}   API keys; RFC 3339
//	x-ratelimit-{remaining,reset}-{requests,tokens}   OpenAI; reset like "6m0s" or "20ms"
//	x-codex-{primary,secondary}-{used-percent,reset-after-seconds,reset-at}   ChatGPT plans
//
// headerState gathers them in one pass over the header map, with no
// allocation: names and values are substrings of the map's own strings.

type winKind uint8

const (
	kindUnified winKind = iota + 1
	kindAPI
	kindOpenAI
	kindCodex
)

type window struct {
	kind winKind
	name string // "5h", "7d_oi", "requests", "primary"; "" for the unified total
	// level: the unified status ("allowed", "allowed_warning",
	// "rejected"), or the remaining count of API-key and OpenAI buckets.
	level      string
	reset      string
	resetAfter string // Codex, seconds
	used       string // unified utilization (0..1) or Codex used-percent (0..100)
}

// maxWindows holds every window one response reports; Anthropic's
// subscriptions send the most, about six.
const maxWindows = 12

type headerState struct {
	// usage: read the unified windows' utilization too. Only
	// ParseUtilization wants it; a verdict reads status and reset, and
	// files two headers a window fewer.
	usage bool

	retryAfter   string
	retryAfterMS string
	claim        string // anthropic-ratelimit-unified-representative-claim
	w            [maxWindows]window
	n            int
	spare        window // absorbs windows past maxWindows
}

func (hs *headerState) read(h http.Header) {
	for k, vs := range h {
		if len(vs) == 0 || len(k) < len("x-codex-") {
			continue
		}
		// Most headers (date, server, request-id…) are ruled out by
		// their first and third letters, which no family shares: reTry,
		// anThropic, x-Ratelimit, x-Codex. net/http hands over canonical
		// keys, which canonical settles; a case-insensitive reading is
		// the fallback for hand-built ones. A key in lower case cannot be
		// canonical.
		switch c := lowerTab[k[2]]; k[0] {
		case 'R', 'A':
			if c != 't' {
				continue
			}
		case 'X':
			if c != 'r' && c != 'c' {
				continue
			}
		case 'r', 'a':
			if c == 't' {
				hs.folded(k, vs[0])
			}
			continue
		case 'x':
			if c == 'r' || c == 'c' {
				hs.folded(k, vs[0])
			}
			continue
		default:
			continue
		}
		if !hs.canonical(k, vs[0]) {
			hs.folded(k, vs[0])
		}
	}
}

// canonical files a key spelt as net/http spells it
// ("Anthropic-Ratelimit-Unified-5h-Reset"). It reports whether the key
// opens with a family's canonical prefix: such a key is settled here,
// filed or not, and any other goes to folded.
//
// This runs for every header of every refusal, and its cost is mostly
// calls. The spellings are literals of at most 16 bytes, which the
// compiler compares as words in line; a longer literal, or one passed
// through a helper, is a call to memequal, which costs about as much as
// the rest of filing the header. Hence prefixes compared in two pieces.
func (hs *headerState) canonical(k, v string) bool {
	if !trimmed(v) {
		v = strings.TrimSpace(v)
	}
	switch k[0] {
	case 'R':
		switch k {
		case "Retry-After":
			hs.retryAfter = v
		case "Retry-After-Ms":
			hs.retryAfterMS = v
		default:
			return false
		}
	case 'A':
		if len(k) < 20 || k[:16] != "Anthropic-Rateli" || k[16:20] != "mit-" {
			return false
		}
		rest := k[20:]
		if len(rest) >= 8 && rest[:8] == "Unified-" {
			// Each field ends in its own letter.
			rest = rest[8:]
			n := len(rest)
			if n == 0 {
				return true
			}
			switch rest[n-1] {
			case 's':
				if rest == "Status" {
					hs.win(kindUnified, "").level = v
				} else if n > 7 && rest[n-7:] == "-Status" {
					hs.win(kindUnified, rest[:n-7]).level = v
				}
			case 't':
				if rest == "Reset" {
					hs.win(kindUnified, "").reset = v
				} else if n > 6 && rest[n-6:] == "-Reset" {
					hs.win(kindUnified, rest[:n-6]).reset = v
				}
			case 'n':
				if hs.usage && n > 12 && rest[n-12:] == "-Utilization" {
					hs.win(kindUnified, rest[:n-12]).used = v
				}
			case 'm':
				if n == 20 && rest[:16] == "Representative-C" && rest[16:] == "laim" {
					hs.claim = v
				}
			}
		} else if n := len(rest) - len("-Remaining"); n > 0 && rest[n:] == "-Remaining" {
			hs.win(kindAPI, rest[:n]).level = v
		} else if n := len(rest) - len("-Reset"); n > 0 && rest[n:] == "-Reset" {
			hs.win(kindAPI, rest[:n]).reset = v
		}
	case 'X':
		switch {
		case len(k) >= 12 && k[:12] == "X-Ratelimit-":
			rest := k[12:]
			if len(rest) >= 6 && rest[:6] == "Reset-" {
				hs.win(kindOpenAI, rest[6:]).reset = v
			} else if len(rest) >= 10 && rest[:10] == "Remaining-" {
				hs.win(kindOpenAI, rest[10:]).level = v
			}
		case len(k) >= 16 && k[:16] == "X-Codex-Primary-":
			hs.codexCanonical("primary", k[16:], v)
		case len(k) >= 18 && k[:16] == "X-Codex-Secondar" && k[16:18] == "y-":
			hs.codexCanonical("secondary", k[18:], v)
		default:
			return false
		}
	default:
		return false
	}
	return true
}

// codexCanonical files the field of an "X-Codex-{Primary,Secondary}-"
// key; v is trimmed.
func (hs *headerState) codexCanonical(name, field, v string) {
	switch field {
	case "Used-Percent":
		hs.win(kindCodex, name).used = v
	case "Reset-After-Seconds":
		hs.win(kindCodex, name).resetAfter = v
	case "Reset-At":
		hs.win(kindCodex, name).reset = v
	}
}

// folded files a key ignoring case, as canonical does by spelling. The
// two read the same families the same way; TestHeaderSpellings keeps
// them so.
func (hs *headerState) folded(k, v string) {
	switch lowerASCII(k[0]) {
	case 'r':
		switch {
		case isFold(k, "retry-after"):
			hs.retryAfter = trimSpace(v)
		case isFold(k, "retry-after-ms"):
			hs.retryAfterMS = trimSpace(v)
		}
	case 'a':
		if !hasPrefixFold(k, "anthropic-ratelimit-") {
			return
		}
		rest := k[len("anthropic-ratelimit-"):]
		if hasPrefixFold(rest, "unified-") {
			hs.unifiedFolded(rest[len("unified-"):], v)
		} else if name, ok := cutNameFold(rest, "-remaining"); ok {
			hs.win(kindAPI, name).level = trimSpace(v)
		} else if name, ok := cutNameFold(rest, "-reset"); ok {
			hs.win(kindAPI, name).reset = trimSpace(v)
		}
	case 'x':
		switch {
		case hasPrefixFold(k, "x-ratelimit-"):
			rest := k[len("x-ratelimit-"):]
			if hasPrefixFold(rest, "reset-") {
				hs.win(kindOpenAI, rest[len("reset-"):]).reset = trimSpace(v)
			} else if hasPrefixFold(rest, "remaining-") {
				hs.win(kindOpenAI, rest[len("remaining-"):]).level = trimSpace(v)
			}
		case hasPrefixFold(k, "x-codex-primary-"):
			hs.codexFolded("primary", k[len("x-codex-primary-"):], v)
		case hasPrefixFold(k, "x-codex-secondary-"):
			hs.codexFolded("secondary", k[len("x-codex-secondary-"):], v)
		}
	}
}

func (hs *headerState) unifiedFolded(rest, v string) {
	switch {
	case isFold(rest, "status"):
		hs.win(kindUnified, "").level = trimSpace(v)
	case isFold(rest, "reset"):
		hs.win(kindUnified, "").reset = trimSpace(v)
	case isFold(rest, "representative-claim"):
		hs.claim = trimSpace(v)
	default:
		if name, ok := cutNameFold(rest, "-status"); ok {
			hs.win(kindUnified, name).level = trimSpace(v)
		} else if name, ok := cutNameFold(rest, "-reset"); ok {
			hs.win(kindUnified, name).reset = trimSpace(v)
		} else if name, ok := cutNameFold(rest, "-utilization"); ok && hs.usage {
			hs.win(kindUnified, name).used = trimSpace(v)
		}
	}
}

func (hs *headerState) codexFolded(name, field, v string) {
	switch {
	case isFold(field, "used-percent"):
		hs.win(kindCodex, name).used = trimSpace(v)
	case isFold(field, "reset-after-seconds"):
		hs.win(kindCodex, name).resetAfter = trimSpace(v)
	case isFold(field, "reset-at"):
		hs.win(kindCodex, name).reset = trimSpace(v)
	}
}

// isFold reports s == low ignoring case. folded reads hand-built keys,
// seldom spelt like its literals, so it skips equalFold's exact try.
func isFold(s, low string) bool {
	return len(s) == len(low) && foldEqual(s, low)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && foldEqual(s[:len(prefix)], prefix)
}

func cutNameFold(s, suffix string) (string, bool) {
	n := len(s) - len(suffix)
	if n > 0 && isFold(s[n:], suffix) {
		return s[:n], true
	}
	return "", false
}

func trimSpace(s string) string {
	if trimmed(s) {
		return s
	}
	return strings.TrimSpace(s)
}

// trimmed reports that strings.TrimSpace would return s as it is, as it
// does for every value net/http hands over. Two table lookups tell, for
// less than the call to TrimSpace costs.
func trimmed(s string) bool {
	return s != "" && edgeKept[s[0]]&edgeKept[s[len(s)-1]] != 0
}

// edgeKept marks the bytes TrimSpace keeps at either end of a string
// whatever else it holds: printable ASCII and DEL.
var edgeKept = func() (t [256]uint8) {
	for c := '!'; c < 0x80; c++ {
		t[c] = 1
	}
	return t
}()

// sameName is equalFold for window names. They are short, and a loop
// costs less than the two calls equalFold makes on a mismatch.
func sameName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerTab[a[i]] != lowerTab[b[i]] {
			return false
		}
	}
	return true
}

func (hs *headerState) win(kind winKind, name string) *window {
	for i := 0; i < hs.n; i++ {
		if hs.w[i].kind == kind && sameName(hs.w[i].name, name) {
			return &hs.w[i]
		}
	}
	if hs.n == maxWindows {
		hs.spare = window{}
		return &hs.spare
	}
	hs.w[hs.n] = window{kind: kind, name: name}
	hs.n++
	return &hs.w[hs.n-1]
}

// What a window says about the refusal at hand.
type winState uint8

const (
	stateUnknown   winState = iota // no status: its reset may be the one
	stateExhausted                 // rejected / remaining 0 / used 100%
	stateOpen                      // explicitly not the limit that was hit
)

func (w *window) state() winState {
	switch w.kind {
	case kindUnified:
		// Overage is extra usage, not a window: its status says whether
		// paid overflow is on, not when the refusal lifts.
		if equalFold(w.name, "overage") {
			return stateOpen
		}
		switch {
		case w.level == "":
			return stateUnknown
		case equalFold(w.level, "rejected"):
			return stateExhausted
		}
		return stateOpen
	case kindAPI, kindOpenAI:
		n, ok := parseDecimal(w.level)
		switch {
		case !ok:
			return stateUnknown
		case n == 0:
			return stateExhausted
		}
		return stateOpen
	case kindCodex:
		n, ok := parseDecimal(w.used)
		switch {
		case !ok:
			return stateUnknown
		case n >= 100:
			return stateExhausted
		}
		return stateOpen
	}
	return stateOpen
}

// resetIn is how long until the window resets; 0 when unknown.
func (w *window) resetIn(now time.Time) time.Duration {
	switch w.kind {
	case kindUnified:
		return untilUnix(w.reset, now)
	case kindAPI:
		if w.reset == "" {
			return 0
		}
		t, err := time.Parse(time.RFC3339, w.reset)
		if err != nil {
			return 0
		}
		return untilStamp(t.Unix(), int64(t.Nanosecond()), now)
	case kindOpenAI:
		return parseResetDuration(w.reset)
	case kindCodex:
		if d := untilUnix(w.reset, now); d > 0 {
			return d
		}
		return secondsDur(w.resetAfter)
	}
	return 0
}

// Shared subscription windows: every model draws from them.
func isSharedWindow(name string) bool {
	return equalFold(name, "5h") || equalFold(name, "7d")
}

// isModelWindow: a window or claim that counts one model family.
func isModelWindow(name string) bool {
	var buf [32]byte
	low := appendLower(buf[:0], []byte(name))
	return containsAny(low, modelMarks[:])
}

// modelMarks are what model windows' names hold: a family, or "7d_oi".
// Every name in modelLimitNames holds one, so looking for these finds
// those names too, in five searches instead of twelve.
var modelMarks = [...]string{"sonnet", "opus", "haiku", "7d_oi", "7d-oi"}

// modelLimited reports that the subscription headers name a per-model
// window as the one rejected while no shared window is: the case where the
// credential still serves other models (CLIProxyAPI#5033 saw 5h and 7d
// "allowed" beside a rejected 7d_oi). Any other rejected window, known or
// not, keeps the verdict credential-wide.
func (hs *headerState) modelLimited() bool {
	model, other := false, false
	for i := 0; i < hs.n; i++ {
		w := &hs.w[i]
		if w.kind != kindUnified || w.name == "" || equalFold(w.name, "overage") {
			continue
		}
		if !equalFold(w.level, "rejected") {
			continue
		}
		if !isSharedWindow(w.name) && isModelWindow(w.name) {
			model = true
		} else {
			other = true
		}
	}
	if other {
		return false // the claim cannot change that
	}
	if !model && hs.claim != "" && isModelWindow(hs.claim) {
		for i := 0; i < hs.n; i++ {
			if w := &hs.w[i]; w.kind == kindUnified && w.name == "" && equalFold(w.level, "rejected") {
				model = true
			}
		}
	}
	return model
}

func equalFold(a, b string) bool {
	return len(a) == len(b) && (a == b || foldEqual(a, b))
}

// foldEqual is equalFold's slow path, kept out of line so that equalFold,
// which the exact comparison almost always settles, inlines.
//
//go:noinline
func foldEqual(a, b string) bool {
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}
