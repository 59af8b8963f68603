package classify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The shortcuts that make a verdict cheap each rest on a claim; these
// tests hold them to it.

// headerKeys are rate-limit header keys and neighbours of theirs, in
// net/http's spelling.
func headerKeys() []string {
	keys := []string{
		"Retry-After", "Retry-After-Ms", "Retry-After-Seconds", "Request-Id",
		"Anthropic-Ratelimit-Unified-", "Anthropic-Ratelimit-Unified-Status",
		"Anthropic-Ratelimit-Unified-Reset", "Anthropic-Ratelimit-Unified-Representative-Claim",
		"Anthropic-Ratelimit-Unified-Fallback-Percentage", "Anthropic-Ratelimit-Unified--Status",
		"Anthropic-Organization-Id", "Anthropic-Ratelimit-", "X-Should-Retry", "X-Codex-Plan-Type",
		"X-Ratelimit-", "X-Ratelimit-Reset-", "X-Codex-Primary-", "X-Codex-Secondary-",
	}
	for _, w := range []string{"5h", "7d", "7d_oi", "7d_sonnet", "Overage", "Weird-Name"} {
		for _, f := range []string{"Status", "Reset", "Utilization", "Surpassed-Threshold"} {
			keys = append(keys, "Anthropic-Ratelimit-Unified-"+w+"-"+f)
		}
	}
	for _, w := range []string{"Requests", "Tokens", "Input-Tokens", "Output-Tokens"} {
		for _, f := range []string{"Remaining", "Reset", "Limit"} {
			keys = append(keys, "Anthropic-Ratelimit-"+w+"-"+f)
		}
	}
	for _, f := range []string{"Remaining", "Reset", "Limit"} {
		for _, w := range []string{"Requests", "Tokens"} {
			keys = append(keys, "X-Ratelimit-"+f+"-"+w)
		}
	}
	for _, w := range []string{"Primary", "Secondary"} {
		for _, f := range []string{"Used-Percent", "Reset-After-Seconds", "Reset-At", "Window-Minutes"} {
			keys = append(keys, "X-Codex-"+w+"-"+f)
		}
	}
	return keys
}

// dumpHeaders prints what a headerState holds. Window names print in
// lower case: they are only ever compared ignoring case.
func dumpHeaders(hs *headerState) string {
	out := fmt.Sprintf("retry-after %q, ms %q, claim %q;", hs.retryAfter, hs.retryAfterMS, hs.claim)
	for _, w := range hs.w[:hs.n] {
		out += fmt.Sprintf(" %d/%s: %q %q %q %q;", w.kind, strings.ToLower(w.name), w.level, w.reset, w.resetAfter, w.used)
	}
	return out
}

// canonical reads by spelling what folded reads ignoring case: a key spelt
// as net/http spells it is filed the same by either, so read loses
// nothing by letting canonical settle the keys it knows.
func TestHeaderSpellings(t *testing.T) {
	for _, k := range headerKeys() {
		if http.CanonicalHeaderKey(k) != k {
			t.Fatalf("%q is not spelt as net/http spells it", k)
		}
		checkSpellings(t, k)
	}
}

func FuzzHeaderSpellings(f *testing.F) {
	for _, k := range headerKeys() {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		// net/http leaves a key with a byte no field name may hold as it
		// is: that one is not in its spelling.
		for i := 0; i < len(k); i++ {
			if c := k[i]; !(c >= '0' && c <= '9' || lowerASCII(c) >= 'a' && lowerASCII(c) <= 'z' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
				return
			}
		}
		if k = http.CanonicalHeaderKey(k); k != "" {
			checkSpellings(t, k)
		}
	})
}

func checkSpellings(t *testing.T, k string) {
	t.Helper()
	for _, usage := range []bool{false, true} {
		byName := headerState{usage: usage}
		filed := byName.canonical(k, " 42 ")
		ignoringCase := headerState{usage: usage}
		ignoringCase.folded(k, " 42 ")
		lower := headerState{usage: usage}
		lower.folded(strings.ToLower(k), " 42 ")
		want := dumpHeaders(&ignoringCase)
		if got := dumpHeaders(&byName); got != want {
			t.Errorf("%q (usage %v): canonical %s, folded %s", k, usage, got, want)
		}
		if got := dumpHeaders(&lower); got != want {
			t.Errorf("%q (usage %v): lower case %s, folded %s", k, usage, got, want)
		}
		if !filed && want != dumpHeaders(&headerState{}) {
			t.Errorf("%q (usage %v): canonical declined a key folded files", k, usage)
		}
		// read's first look at a key passes every key either files.
		for _, spelt := range []string{k, strings.ToLower(k)} {
			viaRead := headerState{usage: usage}
			viaRead.read(http.Header{spelt: {" 42 "}})
			if got := dumpHeaders(&viaRead); got != want {
				t.Errorf("%q (usage %v): read %s, folded %s", spelt, usage, got, want)
			}
		}
	}
}

// A verdict skips utilization; ParseUtilization reads it.
func TestUtilizationOnlyForUsage(t *testing.T) {
	h := hdr("Anthropic-Ratelimit-Unified-5h-Utilization", "0.5", "anthropic-ratelimit-unified-7d-utilization", "0.25")
	var verdict headerState
	verdict.read(h)
	if verdict.n != 0 {
		t.Errorf("a verdict read utilization: %s", dumpHeaders(&verdict))
	}
	usage := headerState{usage: true}
	usage.read(h)
	if usage.n != 2 {
		t.Errorf("utilization not read: %s", dumpHeaders(&usage))
	}
}

func TestLower8(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			for _, fill := range []byte{0, '@', 'A', 'Z', '[', 'z', 0x7f, 0xc1, 0xda, 0xff} {
				var b [8]byte
				for i := range b {
					b[i] = fill
				}
				b[pos] = byte(c)
				var x uint64
				for i := range b {
					x |= uint64(b[i]) << (8 * i)
				}
				x = lower8(x)
				for i := range b {
					if got := byte(x >> (8 * i)); got != lowerASCII(b[i]) {
						t.Fatalf("lower8(%q): byte %d is %q", b, i, got)
					}
				}
			}
		}
	}
}

// parseDecimal adds up the integer part in a uint64; it must come out as
// the float sum it replaced, digit for digit.
func TestParseDecimalExact(t *testing.T) {
	ref := func(s string) (float64, bool) {
		if len(s) == 0 || len(s) > 24 {
			return 0, false
		}
		var n float64
		i, digits := 0, 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			n = n*10 + float64(s[i]-'0')
			digits++
		}
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
	cases := []string{"", "0", "7", "13262", "1777936568", "999999999999999", "9007199254740993",
		"18446744073709551616", "123456789012345678901234", "1234567890123456789012345",
		".5", "5.", ".", "1.08", "0.41", "250.5", "1e3", "-1", "+1", "NaN", "12a", "1.2.3", "00000000000000000001"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(24) {
			b.WriteByte("0123456789"[r.IntN(10)])
		}
		s := b.String()
		if r.IntN(3) == 0 {
			at := r.IntN(len(s) + 1)
			s = s[:at] + "." + s[at:]
		}
		cases = append(cases, s)
	}
	for _, s := range cases {
		wantN, wantOK := ref(s)
		gotN, gotOK := parseDecimal(s)
		if gotOK != wantOK || math.Float64bits(gotN) != math.Float64bits(wantN) {
			t.Fatalf("parseDecimal(%q) = %v, %v; want %v, %v", s, gotN, gotOK, wantN, wantOK)
		}
	}
}

func TestUntilStamp(t *testing.T) {
	nows := []time.Time{time.Now(), benchNow, time.Unix(0, 999999999), time.Unix(-62135596800, 0),
		time.Unix(1<<40, 123), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)}
	r := rand.New(rand.NewPCG(3, 4))
	for _, now := range nows {
		secs := []int64{0, 1e11, now.Unix(), now.Unix() + 1, now.Unix() - 1,
			now.Unix() + 9e9 - 1, now.Unix() - 9e9 + 1, now.Unix() + 9e9, now.Unix() - 9e9,
			now.Unix() + 1e10, now.Unix() - 1e10, math.MaxInt64 / 2, math.MinInt64 / 2}
		for range 1000 {
			secs = append(secs, now.Unix()+r.Int64N(2e10)-1e10)
		}
		for _, sec := range secs {
			for _, nsec := range []int64{0, 1, 500000000, 999999999} {
				want := time.Unix(sec, nsec).Sub(now)
				if got := untilStamp(sec, nsec, now); got != want {
					t.Fatalf("untilStamp(%d, %d, %v) = %v, want %v", sec, nsec, now, got, want)
				}
			}
		}
	}
}

// isModelWindow looks for modelMarks in place of modelLimitNames.
func TestModelMarks(t *testing.T) {
	for _, name := range modelLimitNames {
		if !containsAny([]byte(name), modelMarks[:]) {
			t.Errorf("%q holds no model mark", name)
		}
	}
}

// A code signature may only rule out identifiers that are none of its
// codes.
func TestCodeSig(t *testing.T) {
	lists := [][]string{modelLimitNames}
	for _, p := range builtins {
		for _, r := range p.rules {
			lists = append(lists, r.codes)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, codes := range lists {
		sig := sigOf(codes)
		for _, c := range codes {
			id := []byte(c)
			for i := range id {
				if r.IntN(2) == 0 {
					id[i] = strings.ToUpper(string(id[i]))[0]
				}
			}
			var f fields
			f.addID(id, rankCode)
			if !sig.meets(f.idSig) || !sig.mayHave(id) || f.find(codes, sig) == nil {
				t.Errorf("%q ruled out for %q", id, codes)
			}
		}
	}
}

// The gram set may only rule out phrases that are absent: every phrase
// is found in any case, anywhere in a message.
func TestNeedlesFound(t *testing.T) {
	var all []needle
	for _, p := range builtins {
		for _, r := range p.rules {
			all = append(all, r.needles...)
		}
	}
	all = append(all, modelLimitNeedles...)
	all = append(all, tryAgainLeads...)
	all = append(all, regainNeedle, reachedForNeedle)
	sort.Slice(all, func(i, j int) bool { return all[i].s < all[j].s })
	for _, n := range all {
		for _, msg := range []string{n.s, "Sorry: " + strings.ToUpper(n.s) + ".", strings.Repeat("x", 200) + " " + n.s + " " + strconv.Itoa(len(n.s))} {
			var buf [512]byte
			var g gramSet
			lower := g.lower(buf[:0], []byte(msg))
			if !holdsAny(lower, &g, []needle{n}) {
				t.Errorf("%q not found in %q", n.s, msg)
			}
		}
	}
}
