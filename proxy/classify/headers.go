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
//	x-codex-{primary,secondary}-{used-percent,window-minutes,reset-after-seconds,reset-at}   ChatGPT plans
//	x-codex-{F}-{primary,secondary}-…, x-codex-{F}-limit-name   a per-model limit family F
//	x-codex-credits-{has-credits,unlimited,balance}, x-codex-plan-type
//
// readHeaders gathers them in one pass over the header map, keys compared
// in lower case so hand-built maps read as net/http's do. It is for
// refusals and ReadWindows, which need every family; the readers that run
// on every success (ParseBudget) want a handful of known
// names and look them up directly (headerKey), which costs a few map
// lookups instead of lower-casing every header the upstream sent.

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
	w            []window

	// Read for ReadWindows only.
	overageInUse  string            // anthropic-ratelimit-unified-overage-in-use
	overageReason string            // anthropic-ratelimit-unified-overage-disabled-reason
	codexNames    map[string]string // limit family -> x-codex-{F}-limit-name
	credits       [3]string         // x-codex-credits-{has-credits,unlimited,balance}
	plan          string            // x-codex-plan-type
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

func readHeaders(h http.Header) *headerState {
	hs := &headerState{}
	for k, vs := range h {
		if len(vs) > 0 && familyName(k) {
			hs.file(strings.ToLower(k), strings.TrimSpace(vs[0]))
		}
	}
	return hs
}

// familyName reports whether k may belong to a family file reads, so the
// other headers (date, content-type, request-id, …) cost no lower-case copy.
func familyName(k string) bool {
	for _, p := range [...]string{"anthropic-ratelimit-", "x-ratelimit-", "x-codex-", "retry-after"} {
		if len(k) >= len(p) && strings.EqualFold(k[:len(p)], p) {
			return true
		}
	}
	return false
}

// file records one header; k is in lower case.
func (hs *headerState) file(k, v string) {
	switch {
	case k == "retry-after":
		hs.retryAfter = v
	case k == "retry-after-ms":
		hs.retryAfterMS = v
	case strings.HasPrefix(k, "anthropic-ratelimit-unified-"):
		rest := k[len("anthropic-ratelimit-unified-"):]
		switch rest {
		case "status":
			hs.win(kindUnified, "").level = v
		case "reset":
			hs.win(kindUnified, "").reset = v
		case "representative-claim":
			hs.claim = v
		case "overage-in-use":
			hs.overageInUse = v
		case "overage-disabled-reason":
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
	case strings.HasPrefix(k, "anthropic-ratelimit-"):
		rest := k[len("anthropic-ratelimit-"):]
		if name, ok := cutName(rest, "-remaining"); ok {
			hs.win(kindAPI, name).level = v
		} else if name, ok := cutName(rest, "-reset"); ok {
			hs.win(kindAPI, name).reset = v
		} else if name, ok := cutName(rest, "-limit"); ok {
			hs.win(kindAPI, name).limit = v
		}
	case strings.HasPrefix(k, "x-ratelimit-"):
		rest := k[len("x-ratelimit-"):]
		if name, ok := strings.CutPrefix(rest, "reset-"); ok {
			hs.win(kindOpenAI, name).reset = v
		} else if name, ok := strings.CutPrefix(rest, "remaining-"); ok {
			hs.win(kindOpenAI, name).level = v
		} else if name, ok := strings.CutPrefix(rest, "limit-"); ok {
			hs.win(kindOpenAI, name).limit = v
		}
	case strings.HasPrefix(k, "x-codex-"):
		hs.codex(k[len("x-codex-"):], v)
	}
}

// codex files "x-codex-" + rest: "primary-used-percent" for the plan's
// own windows, "bengalfox-secondary-reset-at" for a per-model family
// (openai/codex codex-rs/codex-api/src/rate_limits.rs reads them so).
func (hs *headerState) codex(rest, v string) {
	switch rest {
	case "credits-has-credits":
		hs.credits[0] = v
		return
	case "credits-unlimited":
		hs.credits[1] = v
		return
	case "credits-balance":
		hs.credits[2] = v
		return
	case "plan-type":
		hs.plan = v
		return
	}
	if family, ok := strings.CutSuffix(rest, "-limit-name"); ok {
		if hs.codexNames == nil {
			hs.codexNames = map[string]string{}
		}
		hs.codexNames[family] = v
		return
	}
	for _, field := range []string{"-used-percent", "-window-minutes", "-reset-after-seconds", "-reset-at"} {
		head, ok := strings.CutSuffix(rest, field)
		if !ok {
			continue
		}
		// head is "[family-]primary" or "[family-]secondary".
		slot := head[strings.LastIndexByte(head, '-')+1:]
		if slot != "primary" && slot != "secondary" {
			return
		}
		w := hs.win(kindCodex, slot)
		if family := strings.TrimSuffix(strings.TrimSuffix(head, slot), "-"); family != "" {
			w = hs.win(kindCodexFamily, family+"-"+slot)
			w.family = family
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

// cutName returns s without suffix, when something is left.
func cutName(s, suffix string) (string, bool) {
	name, ok := strings.CutSuffix(s, suffix)
	return name, ok && name != ""
}

func (hs *headerState) win(kind winKind, name string) *window {
	for i := range hs.w {
		if hs.w[i].kind == kind && hs.w[i].name == name {
			return &hs.w[i]
		}
	}
	hs.w = append(hs.w, window{kind: kind, name: name})
	return &hs.w[len(hs.w)-1]
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
	for _, w := range hs.w {
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
