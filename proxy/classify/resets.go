package classify

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// resetAcc keeps the best reset time seen. A time that belongs to the
// limit actually exhausted (a rejected window, a remaining count of 0, the
// error body's own reset) beats every other; among equals the latest wins,
// because leaving early costs a wasted call and a fresh refusal. Reset
// stamps are often cut to the second (Anthropic's RFC 3339 resets), so an
// exhausted limit's reset up to a second short of the retry-after header
// is the same moment, truncated: then retry-after wins, or we would call
// back before we were told to.
type resetAcc struct {
	exhausted, other, floor time.Duration
}

// addFloor records a retry-after header.
func (a *resetAcc) addFloor(d time.Duration) {
	if d <= 0 || d > MaxRetryAfter {
		return
	}
	a.floor = max(a.floor, d)
	a.other = max(a.other, d)
}

func (a *resetAcc) add(d time.Duration, exhausted bool) {
	// Garbage, past or absurd values are dropped, never clamped: a clamped
	// lie still reads as the upstream's word.
	if d <= 0 || d > MaxRetryAfter {
		return
	}
	if exhausted {
		a.exhausted = max(a.exhausted, d)
	} else {
		a.other = max(a.other, d)
	}
}

func (a *resetAcc) result() time.Duration {
	if a.exhausted > 0 {
		if a.floor > a.exhausted && a.floor-a.exhausted <= time.Second {
			return a.floor
		}
		return a.exhausted
	}
	return a.other
}

// retryAfter gathers every reset signal: headers, body fields and the
// message's own words (lower: the body's text in lower case).
func (p *Profile) retryAfter(hs *headerState, f *fields, lower string, now time.Time) time.Duration {
	var a resetAcc
	a.addFloor(parseRetryAfter(hs.retryAfter, now))
	a.addFloor(millisDur(hs.retryAfterMS))
	ws := hs.windows()
	active := hs.activeFamily()
	for i := range ws {
		w := &ws[i]
		if st := hs.stateIn(w, active); st != stateOpen {
			a.add(w.resetIn(now), st == stateExhausted)
		}
	}
	// Codex's usage_limit_reached carries the exhausted window's reset in
	// the body; retry hints in bodies are generic.
	a.add(untilUnix(f.resetsAt, now), true)
	a.add(secondsDur(f.resetsIn), true)
	a.add(millisDur(f.retryAfterMS), false)
	a.add(secondsDur(f.retryAfterS), false)
	a.add(tryAgainIn(lower), true)
	a.add(regainAccessOn(lower, now), true)
	if p.zai {
		a.add(beijingStamp(lower, now), true)
	}
	if p.google {
		googleRetryAfter(&a, f, lower, now)
	}
	return a.result()
}

// parseRetryAfter reads Retry-After: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if d := secondsDur(v); d > 0 {
		return d
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return t.Sub(now)
}

// parseResetDuration reads OpenAI's reset headers: Go-style durations
// ("6m0s", "20ms", "1s") and, from some compatible servers, bare seconds.
func parseResetDuration(v string) time.Duration {
	if d := secondsDur(v); d > 0 {
		return d
	}
	d, _ := humanDuration(v)
	return d
}

// parseDecimal reads a plain non-negative decimal: digits, an optional
// fraction. Signs, exponents, NaN and Inf are refused: a reset hint that
// needs them is garbage.
func parseDecimal(s string) (float64, bool) {
	if s == "" || len(s) > 24 || !isDecimal(s) || s == "." {
		return 0, false
	}
	// Most values are whole: counts, limits, unix times. Up to 15 digits
	// they are below 2^53, where a float64 holds every integer exactly,
	// so Atoi gives what ParseFloat would at a fraction of its cost. (Where
	// int has 32 bits, Atoi refuses what is past 2^31; ParseFloat reads it.)
	if len(s) <= 15 && strings.IndexByte(s, '.') < 0 {
		if n, err := strconv.Atoi(s); err == nil {
			return float64(n), true
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	return n, err == nil
}

// isDecimal reports whether s is digits with at most one dot. It is one
// pass where strings.Trim and strings.Count took two and built a cut set:
// every answer's counts and resets come through here.
func isDecimal(s string) bool {
	dots := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			dots++
		case c < '0' || c > '9':
			return false
		}
	}
	return dots <= 1
}

// maxSeconds keeps float-to-Duration conversions far from overflow; it is
// well past MaxRetryAfter, so anything this large is dropped anyway.
const maxSeconds = 1e9

func secondsDur(s string) time.Duration {
	n, ok := parseDecimal(s)
	if !ok || n > maxSeconds {
		return 0
	}
	return time.Duration(n * float64(time.Second))
}

func millisDur(s string) time.Duration {
	n, ok := parseDecimal(s)
	if !ok || n > maxSeconds*1000 {
		return 0
	}
	return time.Duration(n * float64(time.Millisecond))
}

// untilUnix turns a unix-seconds reset into a duration from now.
func untilUnix(s string, now time.Time) time.Duration {
	n, ok := parseDecimal(s)
	// Past year 5000 is no reset time; it may be milliseconds, and
	// guessing the unit is how cooldowns end up years long.
	if !ok || n > 1e11 {
		return 0
	}
	sec, frac := math.Modf(n)
	return time.Unix(int64(sec), int64(frac*1e9)).Sub(now)
}

// tryAgainIn reads "Please try again in 11.054s", "try again in 28ms",
// "Try again in 35 seconds", "try again in 4 days 20 hours 9 minutes".
func tryAgainIn(lower string) time.Duration {
	for _, lead := range []string{"try again in ", "retry after ", "try again after "} {
		if _, rest, ok := strings.Cut(lower, lead); ok {
			if d, ok := humanDuration(rest); ok {
				return d
			}
		}
	}
	return 0
}

// humanDuration reads a sequence of number-unit pairs ("1m30s", "6ms",
// "4 days 20 hours", "2 hours and 5 minutes") from the start of s.
func humanDuration(s string) (time.Duration, bool) {
	var total float64
	parts := 0
	for {
		s = strings.TrimLeft(s, " ,~")
		if parts > 0 {
			s = strings.TrimPrefix(s, "and ")
		}
		k := strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
		if k < 0 {
			k = len(s)
		}
		n, ok := parseDecimal(s[:k])
		if !ok {
			break
		}
		s = strings.TrimLeft(s[k:], " ")
		u := strings.IndexFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
		if u < 0 {
			u = len(s)
		}
		unit := unitSeconds(s[:u])
		if unit == 0 {
			break
		}
		total += n * unit
		parts++
		s = s[u:]
	}
	if parts == 0 || total > maxSeconds {
		return 0, false
	}
	return time.Duration(total * float64(time.Second)), true
}

func unitSeconds(u string) float64 {
	switch u {
	case "ms", "msec", "msecs", "millisecond", "milliseconds":
		return 0.001
	case "s", "sec", "secs", "second", "seconds":
		return 1
	case "m", "min", "mins", "minute", "minutes":
		return 60
	case "h", "hr", "hrs", "hour", "hours":
		return 3600
	case "d", "day", "days":
		return 86400
	}
	return 0
}

// regainAccessOn reads Anthropic's spend-cap wording: "You will regain
// access on 2026-09-01 at 00:00 UTC."
func regainAccessOn(lower string, now time.Time) time.Duration {
	_, rest, ok := strings.Cut(lower, "regain access on ")
	if !ok || len(rest) < len("2006-01-02 at 15:04") {
		return 0
	}
	t, err := time.Parse("2006-01-02 at 15:04", rest[:len("2006-01-02 at 15:04")])
	if err != nil {
		return 0
	}
	return t.Sub(now)
}

// beijing is z.ai's clock: its "Your limit will reset at 2026-09-12
// 00:35:41" is wall-clock time in UTC+8 (oh-my-pi#11014 measured it
// against the usage endpoint's UTC reset).
var beijing = time.FixedZone("UTC+8", 8*3600)

// beijingStamp reads the first "YYYY-MM-DD HH:MM:SS" in a z.ai message.
func beijingStamp(lower string, now time.Time) time.Duration {
	const layout = "2006-01-02 15:04:05"
	for i := 0; i+len(layout) <= len(lower); i++ {
		if lower[i+4] != '-' || lower[i+10] != ' ' {
			continue
		}
		if t, err := time.ParseInLocation(layout, lower[i:i+len(layout)], beijing); err == nil {
			return t.Sub(now)
		}
	}
	return 0
}
