package classify

import (
	"math"
	"net/http"
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
// message's own words.
func (p *Profile) retryAfter(hs *headerState, f *fields, lower []byte, g *gramSet, now time.Time) time.Duration {
	var a resetAcc
	if hs.retryAfter != "" {
		a.addFloor(parseRetryAfter(hs.retryAfter, now))
	}
	if hs.retryAfterMS != "" {
		a.addFloor(millisDur(hs.retryAfterMS))
	}
	for i := 0; i < hs.n; i++ {
		w := &hs.w[i]
		st := w.state()
		if st == stateOpen {
			continue
		}
		a.add(w.resetIn(now), st == stateExhausted)
	}
	// Codex's usage_limit_reached carries the exhausted window's reset in
	// the body; retry hints in bodies are generic.
	if f.resetsAt != nil {
		a.add(untilUnix(f.resetsAt, now), true)
	}
	if f.resetsIn != nil {
		a.add(secondsDur(f.resetsIn), true)
	}
	if f.retryAfterMS != nil {
		a.add(millisDur(f.retryAfterMS), false)
	}
	if f.retryAfterS != nil {
		a.add(secondsDur(f.retryAfterS), false)
	}
	if len(lower) > 0 {
		a.add(tryAgainIn(lower, g), true)
		if g.mayHold(&regainNeedle) {
			a.add(regainAccessOn(lower, now), true)
		}
		if p.zai {
			a.add(beijingStamp(lower, now), true)
		}
	}
	return a.result()
}

// Phrases that carry times; their byte pairs gate the searches.
var (
	tryAgainLeads = compileNeedles([]string{"try again in ", "retry after ", "try again after "})
	regainNeedle  = compileNeedles([]string{"regain access on "})[0]
)

// parseRetryAfter reads Retry-After: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if d := secondsDur(v); d > 0 {
		return d
	}
	if len(v) < 20 || v[0] < 'A' || v[0] > 'Z' {
		return 0 // not a date either; skip the parser's allocations
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
	if v == "" {
		return 0
	}
	if d := secondsDur(v); d > 0 {
		return d
	}
	d, ok := humanDuration([]byte(v))
	if !ok {
		return 0
	}
	return d
}

// parseDecimal reads a plain non-negative decimal: digits, an optional
// fraction. Signs, exponents, NaN and Inf are refused: a reset hint that
// needs them is garbage.
func parseDecimal[T ~string | ~[]byte](s T) (float64, bool) {
	if len(s) == 0 || len(s) > 24 {
		return 0, false
	}
	// Up to 15 digits the running value is an integer below 2^53, as
	// exact in a float64 as in a uint64, where it adds up several times
	// faster: a float chain waits on every multiply and add.
	var u uint64
	i := 0
	for ; i < len(s) && i < 15 && s[i]-'0' <= 9; i++ {
		u = u*10 + uint64(s[i]-'0')
	}
	n := float64(u)
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + float64(s[i]-'0')
	}
	digits := i
	if i < len(s) && s[i] == '.' {
		i++
		scale := 0.1
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			n += float64(s[i]-'0') * scale
			scale /= 10
			digits++
		}
	}
	if i != len(s) || digits == 0 {
		return 0, false
	}
	return n, true
}

// maxSeconds keeps float-to-Duration conversions far from overflow; it is
// well past MaxRetryAfter, so anything this large is dropped anyway.
const maxSeconds = 1e9

func secondsDur[T ~string | ~[]byte](s T) time.Duration {
	n, ok := parseDecimal(s)
	if !ok || n > maxSeconds {
		return 0
	}
	return time.Duration(n * float64(time.Second))
}

func millisDur[T ~string | ~[]byte](s T) time.Duration {
	n, ok := parseDecimal(s)
	if !ok || n > maxSeconds*1000 {
		return 0
	}
	return time.Duration(n * float64(time.Millisecond))
}

// untilUnix turns a unix-seconds reset into a duration from now.
func untilUnix[T ~string | ~[]byte](s T, now time.Time) time.Duration {
	n, ok := parseDecimal(s)
	// Past year 5000 is no reset time; it may be milliseconds, and
	// guessing the unit is how cooldowns end up years long.
	if !ok || n > 1e11 {
		return 0
	}
	sec, frac := math.Modf(n)
	return untilStamp(int64(sec), int64(frac*1e9), now)
}

// untilStamp is time.Unix(sec, nsec).Sub(now), nsec in [0, 1e9). Sub
// checks for overflow by adding the result back, which costs more than
// the subtraction; a gap under 9e9 seconds (285 years) cannot overflow.
func untilStamp(sec, nsec int64, now time.Time) time.Duration {
	if d := sec - now.Unix(); d > -9e9 && d < 9e9 {
		return time.Duration(d)*time.Second + time.Duration(nsec-int64(now.Nanosecond()))
	}
	return time.Unix(sec, nsec).Sub(now)
}

// tryAgainIn reads "Please try again in 11.054s", "try again in 28ms",
// "Try again in 35 seconds", "try again in 4 days 20 hours 9 minutes".
func tryAgainIn(lower []byte, g *gramSet) time.Duration {
	for i := range tryAgainLeads {
		lead := &tryAgainLeads[i]
		if !g.mayHold(lead) {
			continue
		}
		if j := indexStr(lower, lead.s); j >= 0 {
			if d, ok := humanDuration(lower[j+len(lead.s):]); ok {
				return d
			}
		}
	}
	return 0
}

// humanDuration reads a sequence of number-unit pairs ("1m30s", "6ms",
// "4 days 20 hours", "2 hours and 5 minutes") from the start of b.
func humanDuration(b []byte) (time.Duration, bool) {
	var total float64
	parts := 0
	i := 0
	for i < len(b) {
		j := i
		for j < len(b) && (b[j] == ' ' || b[j] == ',' || b[j] == '~') {
			j++
		}
		if parts > 0 && hasPrefixBytes(b[j:], "and ") {
			j += len("and ")
		}
		k := j
		for k < len(b) && (b[k] >= '0' && b[k] <= '9' || b[k] == '.') {
			k++
		}
		if k == j {
			break
		}
		n, ok := parseDecimal(b[j:k])
		if !ok {
			break
		}
		for k < len(b) && b[k] == ' ' {
			k++
		}
		u := k
		for u < len(b) && lowerASCII(b[u]) >= 'a' && lowerASCII(b[u]) <= 'z' {
			u++
		}
		unit := unitSeconds(b[k:u])
		if unit == 0 {
			break
		}
		total += n * unit
		parts++
		i = u
	}
	if parts == 0 || total > maxSeconds {
		return 0, false
	}
	return time.Duration(total * float64(time.Second)), true
}

func unitSeconds(u []byte) float64 {
	switch string(u) {
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
func regainAccessOn(lower []byte, now time.Time) time.Duration {
	const lead = "regain access on "
	i := indexStr(lower, lead)
	if i < 0 {
		return 0
	}
	s := lower[i+len(lead):]
	// 2006-01-02 at 15:04
	if len(s) < 19 || string(s[10:14]) != " at " {
		return 0
	}
	y, mo, d, ok := ymd(s[:10])
	if !ok {
		return 0
	}
	hh, mm, ok2 := hhmm(s[14:19])
	if !ok2 {
		return 0
	}
	return time.Date(y, time.Month(mo), d, hh, mm, 0, 0, time.UTC).Sub(now)
}

// beijing is z.ai's clock: its "Your limit will reset at 2026-09-12
// 00:35:41" is wall-clock time in UTC+8 (oh-my-pi#11014 measured it
// against the usage endpoint's UTC reset).
var beijing = time.FixedZone("UTC+8", 8*3600)

// beijingStamp finds the first "YYYY-MM-DD HH:MM:SS" in a z.ai message.
func beijingStamp(lower []byte, now time.Time) time.Duration {
	for i := 0; i+19 <= len(lower); i++ {
		s := lower[i : i+19]
		if s[4] != '-' || s[10] != ' ' || s[13] != ':' {
			continue
		}
		y, mo, d, ok := ymd(s[:10])
		if !ok {
			continue
		}
		hh, mm, ok2 := hhmm(s[11:16])
		if !ok2 || s[16] != ':' || !isDigits(s[17:19]) {
			continue
		}
		sec := int(s[17]-'0')*10 + int(s[18]-'0')
		if sec > 59 {
			continue
		}
		return time.Date(y, time.Month(mo), d, hh, mm, sec, 0, beijing).Sub(now)
	}
	return 0
}

func ymd(s []byte) (y, m, d int, ok bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' || !isDigits(s[:4]) || !isDigits(s[5:7]) || !isDigits(s[8:10]) {
		return 0, 0, 0, false
	}
	y = int(s[0]-'0')*1000 + int(s[1]-'0')*100 + int(s[2]-'0')*10 + int(s[3]-'0')
	m = int(s[5]-'0')*10 + int(s[6]-'0')
	d = int(s[8]-'0')*10 + int(s[9]-'0')
	return y, m, d, m >= 1 && m <= 12 && d >= 1 && d <= 31
}

func hhmm(s []byte) (h, m int, ok bool) {
	if len(s) != 5 || s[2] != ':' || !isDigits(s[:2]) || !isDigits(s[3:5]) {
		return 0, 0, false
	}
	h = int(s[0]-'0')*10 + int(s[1]-'0')
	m = int(s[3]-'0')*10 + int(s[4]-'0')
	return h, m, h <= 23 && m <= 59
}

func hasPrefixBytes(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[:len(s)]) == s
}
