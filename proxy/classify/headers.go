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
	retryAfter   string
	retryAfterMS string
	claim        string // anthropic-ratelimit-unified-representative-claim
	w            [maxWindows]window
	n            int
	spare        window // absorbs windows past maxWindows
}

func (hs *headerState) read(h http.Header) {
	for k, vs := range h {
		// Most headers (date, server, content-type…) are ruled out by
		// their first letter.
		if len(vs) == 0 || len(k) < len("x-codex-") {
			continue
		}
		switch k[0] {
		case 'r', 'R', 'a', 'A', 'x', 'X':
		default:
			continue
		}
		// net/http hands over canonical keys, so a plain comparison with
		// the canonical spelling settles almost every header; a
		// case-insensitive pass is the fallback for hand-built ones.
		if !hs.key(k, vs[0], true) {
			hs.key(k, vs[0], false)
		}
	}
}

// key files one header; exact compares with the canonical spelling only.
// It reports whether the key belongs to a family read here.
func (hs *headerState) key(k, raw string, exact bool) bool {
	v := strings.TrimSpace(raw)
	switch {
	case fRetryAfter.is(k, exact):
		hs.retryAfter = v
	case fRetryMS.is(k, exact):
		hs.retryAfterMS = v
	case fUnified.prefixes(k, exact):
		hs.unified(k[len(fUnified.low):], v, exact)
	case fAnthropic.prefixes(k, exact):
		rest := k[len(fAnthropic.low):]
		if name, ok := fRemaining.cut(rest, exact); ok {
			hs.win(kindAPI, name).level = v
		} else if name, ok := fReset.cut(rest, exact); ok {
			hs.win(kindAPI, name).reset = v
		}
	case fOpenAI.prefixes(k, exact):
		rest := k[len(fOpenAI.low):]
		if fResetPre.prefixes(rest, exact) {
			hs.win(kindOpenAI, rest[len(fResetPre.low):]).reset = v
		} else if fRemainPre.prefixes(rest, exact) {
			hs.win(kindOpenAI, rest[len(fRemainPre.low):]).level = v
		}
	case fPrimary.prefixes(k, exact):
		hs.codex("primary", k[len(fPrimary.low):], v, exact)
	case fSecondary.prefixes(k, exact):
		hs.codex("secondary", k[len(fSecondary.low):], v, exact)
	default:
		return false
	}
	return true
}

func (hs *headerState) unified(rest, v string, exact bool) {
	switch {
	case fStatusW.is(rest, exact):
		hs.win(kindUnified, "").level = v
	case fResetW.is(rest, exact):
		hs.win(kindUnified, "").reset = v
	case fClaim.is(rest, exact):
		hs.claim = v
	default:
		if name, ok := fStatus.cut(rest, exact); ok {
			hs.win(kindUnified, name).level = v
		} else if name, ok := fReset.cut(rest, exact); ok {
			hs.win(kindUnified, name).reset = v
		} else if name, ok := fUtil.cut(rest, exact); ok {
			hs.win(kindUnified, name).used = v
		}
	}
}

func (hs *headerState) codex(name, field, v string, exact bool) {
	switch {
	case fUsedPct.is(field, exact):
		hs.win(kindCodex, name).used = v
	case fResetAfter.is(field, exact):
		hs.win(kindCodex, name).resetAfter = v
	case fResetAt.is(field, exact):
		hs.win(kindCodex, name).reset = v
	}
}

func (hs *headerState) win(kind winKind, name string) *window {
	for i := 0; i < hs.n; i++ {
		if hs.w[i].kind == kind && equalFold(hs.w[i].name, name) {
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
		return t.Sub(now)
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
	return containsAny(low, modelLimitNames) || containsAny(low, modelFamilies[:])
}

var modelFamilies = [...]string{"sonnet", "opus", "haiku"}

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
	if !model && hs.claim != "" && isModelWindow(hs.claim) {
		for i := 0; i < hs.n; i++ {
			if w := &hs.w[i]; w.kind == kindUnified && w.name == "" && equalFold(w.level, "rejected") {
				model = true
			}
		}
	}
	return model && !other
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	if a == b {
		return true
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

// frag is a header-name fragment in both spellings: lower case, and the
// canonical form net/http gives keys ("Anthropic-Ratelimit-Unified-").
type frag struct{ low, canon string }

func (f frag) is(s string, exact bool) bool {
	if exact {
		return s == f.canon
	}
	return equalFold(s, f.low)
}

func (f frag) prefixes(s string, exact bool) bool {
	return len(s) >= len(f.low) && f.is(s[:len(f.low)], exact)
}

func (f frag) cut(s string, exact bool) (string, bool) {
	if len(s) > len(f.low) && f.is(s[len(s)-len(f.low):], exact) {
		return s[:len(s)-len(f.low)], true
	}
	return "", false
}

var (
	fUnified    = frag{"anthropic-ratelimit-unified-", "Anthropic-Ratelimit-Unified-"}
	fAnthropic  = frag{"anthropic-ratelimit-", "Anthropic-Ratelimit-"}
	fOpenAI     = frag{"x-ratelimit-", "X-Ratelimit-"}
	fPrimary    = frag{"x-codex-primary-", "X-Codex-Primary-"}
	fSecondary  = frag{"x-codex-secondary-", "X-Codex-Secondary-"}
	fRemaining  = frag{"-remaining", "-Remaining"}
	fReset      = frag{"-reset", "-Reset"}
	fStatus     = frag{"-status", "-Status"}
	fUtil       = frag{"-utilization", "-Utilization"}
	fResetPre   = frag{"reset-", "Reset-"}
	fRemainPre  = frag{"remaining-", "Remaining-"}
	fRetryAfter = frag{"retry-after", "Retry-After"}
	fRetryMS    = frag{"retry-after-ms", "Retry-After-Ms"}
	fStatusW    = frag{"status", "Status"}
	fResetW     = frag{"reset", "Reset"}
	fClaim      = frag{"representative-claim", "Representative-Claim"}
	fUsedPct    = frag{"used-percent", "Used-Percent"}
	fResetAfter = frag{"reset-after-seconds", "Reset-After-Seconds"}
	fResetAt    = frag{"reset-at", "Reset-At"}
)
