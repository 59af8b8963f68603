package classify

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

// Rate-limit headers come in families, each describing some windows:
//
//	anthropic-ratelimit-unified-{W}-{status,reset,utilization}   subscriptions; reset in unix seconds
//	anthropic-ratelimit-unified-{status,reset,representative-claim}
//	anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{remaining,reset}   API keys; RFC 3339
//	x-ratelimit-{remaining,reset}-{requests,tokens}   OpenAI; reset like "6m0s" or "20ms"
//	x-codex-{primary,secondary}-{used-percent,window-minutes,reset-after-seconds,reset-at}   ChatGPT plans
//	x-codex-{F}-{primary,secondary}-…, x-codex-{F}-limit-name   a per-model limit family F
//	x-codex-credits-{has-credits,unlimited,balance}, x-codex-plan-type
//	x-codex-active-limit   the limit the request counted against: "codex" (the plan's own windows) or "codex_F"
//
// headerState.read gathers them in one pass over the header map, keys
// compared ignoring ASCII case so hand-built maps read as net/http's do. It
// is for refusals and ReadWindows, which need every family; the readers
// that run on every success (ParseBudget) want a handful of known names and
// look them up directly (headerKey), which costs a few map lookups instead
// of a pass over every header the upstream sent.
//
// ReadWindows runs on every answer the proxy serves, so reading allocates
// as little as it can: the state lives on the caller's stack with room
// for a typical answer's windows, keys are compared in whatever case they
// come in rather than lowered copies, and only a window's name, once, is
// stored in lower case.

type winKind uint8

const (
	kindUnified winKind = iota + 1
	kindAPI
	kindOpenAI
	kindCodex
	// kindCodexFamily: a per-model Codex limit ("x-codex-bengalfox-…").
	// A verdict does not know the request's model, so these never set
	// its reset time; ReadWindows reports them.
	kindCodexFamily
)

type window struct {
	kind winKind
	name string // lower case: "5h", "7d_oi", "requests", "primary"; "" for the unified total
	// level: the unified status ("allowed", "allowed_warning",
	// "rejected"), or the remaining count of API-key and OpenAI buckets.
	level      string
	reset      string
	resetAfter string // Codex, seconds
	used       string // unified utilization (0..1) or Codex used-percent (0..100)
	limit      string // API-key and OpenAI bucket size
	minutes    string // Codex window-minutes
	family     string // kindCodexFamily: "bengalfox"
}

type headerState struct {
	retryAfter   string
	retryAfterMS string
	claim        string // anthropic-ratelimit-unified-representative-claim

	// Read for ReadWindows only.
	overageInUse  string            // anthropic-ratelimit-unified-overage-in-use
	overageReason string            // anthropic-ratelimit-unified-overage-disabled-reason
	codexNames    map[string]string // limit family -> x-codex-{F}-limit-name
	credits       [3]string         // x-codex-credits-{has-credits,unlimited,balance}
	plan          string            // x-codex-plan-type
	activeLimit   string            // x-codex-active-limit

	// The windows read so far are room[:n], or more once room is full
	// (windows returns them). No slice in hs points into room: that would
	// move a caller's hs off its stack, and room is there so that the
	// windows of a typical answer cost no allocation.
	room [8]window
	n    int
	more []window
}

// headerKey is one header name in both spellings a map may hold it in:
// net/http's canonical form (every response read off the wire) and lower
// case (maps built by hand, as readHeaders accepts them).
type headerKey struct{ canon, lower string }

func keyOf(lower string) headerKey {
	return headerKey{http.CanonicalHeaderKey(lower), lower}
}

// in returns the header's first value, trimmed; "" when it is absent or
// n is the zero headerKey.
func (n headerKey) in(h http.Header) string {
	if n.canon == "" {
		return ""
	}
	vs, ok := h[n.canon]
	if !ok {
		vs = h[n.lower]
	}
	if len(vs) == 0 {
		return ""
	}
	return strings.TrimSpace(vs[0])
}

// read files every rate-limit header of h. hs is the caller's local
// variable, so reading allocates nothing for the usual answer.
func (hs *headerState) read(h http.Header) {
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		// file ignores ASCII case, so net/http's canonical keys
		// ("Anthropic-Ratelimit-Requests-Remaining") need no lower-case
		// copy, and passes over the keys of no family (date,
		// content-type, …). strings.ToLower turns a few other letters
		// into ASCII (the Kelvin sign into k), so a family's key with
		// them is lowered whole, as it always was.
		if !isASCII(k) {
			if !familyName(k) {
				continue
			}
			k = strings.ToLower(k)
		}
		hs.file(k, vs[0])
	}
}

// familyName reports whether k may belong to a family file reads.
func familyName(k string) bool {
	for _, p := range [...]string{"anthropic-ratelimit-", "x-ratelimit-", "x-codex-", "retry-after"} {
		if hasPrefixFold(k, p) {
			return true
		}
	}
	return false
}

// file records one header if it belongs to a family; k is compared
// ignoring ASCII case, v is trimmed. Each family's prefix is first
// compared as net/http spells every key it reads ("Anthropic-Ratelimit-"):
// a key off the wire then matches in one plain comparison rather than
// byte by byte.
func (hs *headerState) file(k, v string) {
	v = strings.TrimSpace(v)
	switch {
	case foldEq(k, "retry-after"):
		hs.retryAfter = v
	case foldEq(k, "retry-after-ms"):
		hs.retryAfterMS = v
	case strings.HasPrefix(k, "Anthropic-Ratelimit-") || hasPrefixFold(k, "anthropic-ratelimit-"):
		rest := k[len("anthropic-ratelimit-"):]
		if strings.HasPrefix(rest, "Unified-") || hasPrefixFold(rest, "unified-") {
			hs.unified(rest[len("unified-"):], v)
		} else if name, ok := cutName(rest, "-remaining"); ok {
			hs.win(kindAPI, name).level = v
		} else if name, ok := cutName(rest, "-reset"); ok {
			hs.win(kindAPI, name).reset = v
		} else if name, ok := cutName(rest, "-limit"); ok {
			hs.win(kindAPI, name).limit = v
		}
	case strings.HasPrefix(k, "X-Ratelimit-") || hasPrefixFold(k, "x-ratelimit-"):
		rest := k[len("x-ratelimit-"):]
		if name, ok := cutPrefixFold(rest, "reset-"); ok {
			hs.win(kindOpenAI, name).reset = v
		} else if name, ok := cutPrefixFold(rest, "remaining-"); ok {
			hs.win(kindOpenAI, name).level = v
		} else if name, ok := cutPrefixFold(rest, "limit-"); ok {
			hs.win(kindOpenAI, name).limit = v
		}
	case strings.HasPrefix(k, "X-Codex-") || hasPrefixFold(k, "x-codex-"):
		hs.codex(k[len("x-codex-"):], v)
	}
}

// unified files "anthropic-ratelimit-unified-" + rest.
func (hs *headerState) unified(rest, v string) {
	switch {
	case foldEq(rest, "status"):
		hs.win(kindUnified, "").level = v
	case foldEq(rest, "reset"):
		hs.win(kindUnified, "").reset = v
	case foldEq(rest, "representative-claim"):
		hs.claim = v
	case foldEq(rest, "overage-in-use"):
		hs.overageInUse = v
	case foldEq(rest, "overage-disabled-reason"):
		hs.overageReason = v
	default:
		if name, ok := cutName(rest, "-status"); ok {
			hs.win(kindUnified, name).level = v
		} else if name, ok := cutName(rest, "-reset"); ok {
			hs.win(kindUnified, name).reset = v
		} else if name, ok := cutName(rest, "-utilization"); ok {
			hs.win(kindUnified, name).used = v
		}
	}
}

// codex files "x-codex-" + rest: "primary-used-percent" for the plan's
// own windows, "bengalfox-secondary-reset-at" for a per-model family
// (openai/codex codex-rs/codex-api/src/rate_limits.rs reads them so).
func (hs *headerState) codex(rest, v string) {
	switch {
	case foldEq(rest, "credits-has-credits"):
		hs.credits[0] = v
		return
	case foldEq(rest, "credits-unlimited"):
		hs.credits[1] = v
		return
	case foldEq(rest, "credits-balance"):
		hs.credits[2] = v
		return
	case foldEq(rest, "plan-type"):
		hs.plan = v
		return
	case foldEq(rest, "active-limit"):
		hs.activeLimit = v
		return
	}
	if family, ok := cutSuffixFold(rest, "-limit-name"); ok {
		if hs.codexNames == nil {
			hs.codexNames = map[string]string{}
		}
		hs.codexNames[strings.ToLower(family)] = v
		return
	}
	for _, field := range []string{"-used-percent", "-window-minutes", "-reset-after-seconds", "-reset-at"} {
		head, ok := cutSuffixFold(rest, field)
		if !ok {
			continue
		}
		// head is "[family-]primary" or "[family-]secondary".
		slot := head[strings.LastIndexByte(head, '-')+1:]
		if !foldEq(slot, "primary") && !foldEq(slot, "secondary") {
			return
		}
		w := hs.win(kindCodex, slot)
		if family := strings.TrimSuffix(head[:len(head)-len(slot)], "-"); family != "" {
			w = hs.win(kindCodexFamily, head) // head is family + "-" + slot
			if w.family == "" {
				w.family = strings.ToLower(family)
			}
		}
		switch field {
		case "-used-percent":
			w.used = v
		case "-window-minutes":
			w.minutes = v
		case "-reset-after-seconds":
			w.resetAfter = v
		case "-reset-at":
			w.reset = v
		}
		return
	}
}

// cutName returns s without suffix (ignoring ASCII case), when something
// is left.
func cutName(s, suffix string) (string, bool) {
	name, ok := cutSuffixFold(s, suffix)
	return name, ok && name != ""
}

// win returns the window of that kind and name, adding it when it is new.
// name may be in any case; the window keeps it in lower case.
func (hs *headerState) win(kind winKind, name string) *window {
	ws := hs.windows()
	for i := range ws {
		if ws[i].kind == kind && foldEq(name, ws[i].name) {
			return &ws[i]
		}
	}
	w := window{kind: kind, name: lowerName(name)}
	switch {
	case hs.more != nil:
		hs.more = append(hs.more, w)
	case hs.n < len(hs.room):
		hs.room[hs.n] = w
		hs.n++
		return &hs.room[hs.n-1]
	default:
		hs.more = append(slices.Clone(hs.room[:]), w)
	}
	return &hs.more[len(hs.more)-1]
}

// windows are the windows read, in the order their first header came.
func (hs *headerState) windows() []window {
	if hs.more != nil {
		return hs.more
	}
	return hs.room[:hs.n]
}

// commonNames are window names as net/http hands them over capitalised
// ("Requests", "Input-Tokens", "Primary"), in lower case: lowerName
// returns these strings rather than building a copy on every answer.
var commonNames = [...]string{"requests", "tokens", "input-tokens", "output-tokens", "primary", "secondary", "overage"}

// lowerName is strings.ToLower(name), without a new string for the
// common names.
func lowerName(name string) string {
	for _, c := range commonNames {
		if foldEq(name, c) {
			return c
		}
	}
	return strings.ToLower(name)
}

// foldEq reports whether s equals lower, which is in lower case, ignoring
// the case of ASCII letters: strings.ToLower(s) == lower without the copy,
// for the ASCII keys read passes it. strings.EqualFold would not do: it
// also matches letters that strings.ToLower keeps apart (the long s "ſ"
// and "s"), so a hand-built key could read differently.
func foldEq(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		// Most bytes of a canonical key are in lower case already.
		if c := s[i]; c != lower[i] && !('A' <= c && c <= 'Z' && c+('a'-'A') == lower[i]) {
			return false
		}
	}
	return true
}

// hasPrefixFold, cutPrefixFold and cutSuffixFold are strings.HasPrefix,
// CutPrefix and CutSuffix comparing as foldEq does.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && foldEq(s[:len(prefix)], prefix)
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if !hasPrefixFold(s, prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) < len(suffix) || !foldEq(s[len(s)-len(suffix):], suffix) {
		return s, false
	}
	return s[:len(s)-len(suffix)], true
}

// isASCII reports whether s holds only ASCII bytes. Every header key of
// every answer passes here, so it tests eight bytes at a time (the high
// bit of each), as unicode/utf8 does; the compiler makes the eight byte
// reads one load.
func isASCII(s string) bool {
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if w&0x8080808080808080 != 0 {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
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
		switch {
		case w.name == "overage":
			return stateOpen
		case w.level == "":
			return stateUnknown
		case strings.EqualFold(w.level, "rejected"):
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

// activeFamily is the per-model Codex limit family the answer names in
// x-codex-active-limit ("codex_bengalfox" is the family whose headers
// are x-codex-bengalfox-*, as codex-rs turns a limit id into a header
// prefix), when its headers came too; "" for the plan's own limit
// ("codex") and for a limit whose headers are absent ("premium" beside
// only x-codex-primary-*: the plan's windows are then all there is).
func (hs *headerState) activeFamily() string {
	id := strings.ToLower(strings.TrimSpace(hs.activeLimit))
	id = strings.ReplaceAll(id, "_", "-")
	family, ok := strings.CutPrefix(id, "codex-")
	if !ok || family == "" {
		return ""
	}
	for _, w := range hs.windows() {
		if w.kind == kindCodexFamily && w.family == family {
			return family
		}
	}
	return ""
}

// stateIn is w's state in this answer. A per-model family's windows say
// nothing about a refusal (a verdict does not know the request's model),
// unless the answer names that family as the limit the request counted
// against: then they are read as the plan's own windows are.
func (hs *headerState) stateIn(w *window, active string) winState {
	if w.kind == kindCodexFamily && active != "" && w.family == active {
		plan := *w
		plan.kind = kindCodex
		return plan.state()
	}
	return w.state()
}

// codexFamilyLimited reports that the answer names a per-model family as
// the active limit, that family has a spent window, and none of the plan's
// own windows is spent: the credential still serves other models.
func (hs *headerState) codexFamilyLimited() bool {
	active := hs.activeFamily()
	if active == "" {
		return false
	}
	spent := false
	for _, w := range hs.windows() {
		switch {
		case w.kind == kindCodex && w.state() == stateExhausted:
			return false
		case w.kind == kindCodexFamily && w.family == active && hs.stateIn(&w, active) == stateExhausted:
			spent = true
		}
	}
	return spent
}

// resetIn is how long until the window resets; 0 when unknown.
func (w *window) resetIn(now time.Time) time.Duration {
	switch w.kind {
	case kindUnified:
		return untilUnix(w.reset, now)
	case kindAPI:
		t, err := time.Parse(time.RFC3339, w.reset)
		if err != nil {
			return 0
		}
		return t.Sub(now)
	case kindOpenAI:
		return parseResetDuration(w.reset)
	case kindCodex, kindCodexFamily:
		if d := untilUnix(w.reset, now); d > 0 {
			return d
		}
		return secondsDur(w.resetAfter)
	}
	return 0
}

// isModelWindow: a window or claim that counts one model family. Every
// name in modelLimitNames holds one of these marks.
func isModelWindow(name string) bool {
	low := strings.ToLower(name)
	for _, mark := range []string{"sonnet", "opus", "haiku", "7d_oi", "7d-oi"} {
		if strings.Contains(low, mark) {
			return true
		}
	}
	return false
}

// modelLimited reports that the subscription headers name a per-model
// window as the one rejected while no shared window is: the case where the
// credential still serves other models (CLIProxyAPI#5033 saw 5h and 7d
// "allowed" beside a rejected 7d_oi). Any other rejected window, known or
// not, keeps the verdict credential-wide.
func (hs *headerState) modelLimited() bool {
	model, other, total := false, false, false
	for _, w := range hs.windows() {
		if w.kind != kindUnified || w.name == "overage" || !strings.EqualFold(w.level, "rejected") {
			continue
		}
		switch {
		case w.name == "":
			total = true
		case isModelWindow(w.name):
			model = true
		default:
			other = true
		}
	}
	if other {
		return false // the claim cannot change that
	}
	// Only the total is rejected: the representative claim says which
	// window it was.
	return model || total && isModelWindow(hs.claim)
}
