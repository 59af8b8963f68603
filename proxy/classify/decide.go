package classify

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"slices"
	"strings"
	"time"
)

// decide turns a parsed refusal into a verdict: the table says the class,
// the headers and body say how far it reaches and when it lifts.
func (p *Profile) decide(status int, h http.Header, f *fields, now time.Time, stream bool) Verdict {
	// Phrases are matched on a lower-cased copy of the message's head;
	// 512 bytes hold every message in the corpus with room to spare.
	var lowBuf [512]byte
	var g gramSet
	lower := g.lower(lowBuf[:0], f.msg)
	if p.zai {
		f.zaiCode()
	}
	class, scope, why, code := p.match(status, f, lower, &g)
	if code == nil {
		code = f.primary()
	}
	var hs headerState
	if len(h) > 0 && (class == RateLimit || class == Capacity || class == Transient || class == Payment) {
		hs.read(h)
	}
	v := Verdict{Class: class, Scope: scope}
	switch class {
	case RateLimit:
		v.Scope = p.rateScope(&hs, f, lower, &g)
		v.RetryAfter = p.retryAfter(&hs, f, lower, &g, now)
	case Capacity, Transient, Payment:
		v.RetryAfter = p.retryAfter(&hs, f, lower, &g, now)
	}
	v.Reason = reason(status, stream, code, why, f.msg)
	return v
}

// match finds the first table rule that fits, else judges by status. It
// returns the identifier that matched, for the reason line.
func (p *Profile) match(status int, f *fields, lower []byte, g *gramSet) (Class, Scope, string, []byte) {
	for i := range p.rules {
		r := &p.rules[i]
		if len(r.status) > 0 && !hasInt(r.status, status) {
			continue
		}
		var id []byte
		if len(r.codes) > 0 {
			// Most rules share no length or first letter with the body's
			// few identifiers: passed over here, without a call.
			if !r.codeSig.meets(f.idSig) {
				continue
			}
			if id = f.find(r.codes, r.codeSig); id == nil {
				continue
			}
		}
		if len(r.needles) > 0 && !holdsAny(lower, g, r.needles) {
			continue
		}
		return r.class, r.scope, r.why, id
	}
	c, s, w := byStatus(status)
	return c, s, w, nil
}

// rateScope says how far a rate limit reaches. An egress-limited provider
// counts per IP address, so every credential behind it is spent. A model
// scope needs the upstream to name the exhausted limit: reading an
// ambiguous 429 as model-scoped would keep offering a credential whose
// shared limit is spent, a wasted call per model, while reading it
// credential-wide at worst rests a credential longer than needed.
func (p *Profile) rateScope(hs *headerState, f *fields, lower []byte, g *gramSet) Scope {
	if p.LimitScope == LimitEgress {
		return ScopeProvider
	}
	if hs.modelLimited() || namesModelLimit(f, lower, g) {
		return ScopeModel
	}
	return ScopeCredential
}

// modelLimitNames are per-model subscription windows as Anthropic names
// them in headers, representative claims and bodies.
var modelLimitNames = []string{
	"seven_day_sonnet", "seven_day_opus", "seven_day_haiku",
	"7d_sonnet", "7d-sonnet", "7d_opus", "7d-opus", "7d_oi", "7d-oi",
}

var (
	modelLimitNeedles = compileNeedles(modelLimitNames)
	modelLimitSig     = sigOf(modelLimitNames)
)

func namesModelLimit(f *fields, lower []byte, g *gramSet) bool {
	if modelLimitSig.meets(f.idSig) && f.find(modelLimitNames, modelLimitSig) != nil || holdsAny(lower, g, modelLimitNeedles) {
		return true
	}
	return openAIModelLimit(lower, g)
}

var reachedForNeedle = compileNeedles([]string{"rate limit reached for "})[0]

// openAIModelLimit reads OpenAI's "Rate limit reached for gpt-4.1 in
// organization org-… on tokens per min": OpenAI limits are per model, and
// this message names the one that is spent. Tier names such as
// "10KTPM-200RPM" (older messages) start with a digit and are not models.
func openAIModelLimit(lower []byte, g *gramSet) bool {
	const lead, tail = "rate limit reached for ", " in organization"
	if !g.mayHold(&reachedForNeedle) {
		return false
	}
	i := indexStr(lower, lead)
	if i < 0 {
		return false
	}
	rest := lower[i+len(lead):]
	j := indexStr(rest, tail)
	if j <= 0 {
		return false
	}
	model := rest[:j]
	if c := model[0]; c < 'a' || c > 'z' {
		return false
	}
	return bytes.IndexByte(model, ' ') < 0
}

// zaiCode lifts z.ai's business code out of a "[1308][message][id]"
// message when the body carried no code of its own.
func (f *fields) zaiCode() {
	for i := 0; i < f.n; i++ {
		if len(f.ids[i]) == 4 && isDigits(f.ids[i]) {
			return
		}
	}
	m := f.msg
	if len(m) >= 6 && m[0] == '[' && m[5] == ']' && isDigits(m[1:5]) {
		f.addID(m[1:5], rankCode)
	}
}

// find returns the first identifier that is one of codes, ignoring case;
// sig is sigOf(codes).
func (f *fields) find(codes []string, sig codeSig) []byte {
	for i := 0; i < f.n; i++ {
		id := f.ids[i]
		if !sig.mayHave(id) {
			continue
		}
		for _, c := range codes {
			if equalFoldBS(id, c) {
				return id
			}
		}
	}
	return nil
}

// codeSig sums up identifiers by their lengths and case-folded first
// bytes, a bit each: two identifiers that are equal ignoring case have
// the same bits, so codes with none in common with an identifier need no
// comparison.
type codeSig struct{ lens, firsts uint64 }

func sigOf(codes []string) codeSig {
	var s codeSig
	for _, c := range codes {
		addSig(&s, c)
	}
	return s
}

func addSig[T ~string | ~[]byte](s *codeSig, c T) {
	if len(c) > 0 {
		s.lens |= 1 << min(len(c), 63)
		s.firsts |= 1 << (lowerTab[c[0]] % 64)
	}
}

// meets: some identifier summed in t may be one of the codes in s.
func (s codeSig) meets(t codeSig) bool {
	return s.lens&t.lens != 0 && s.firsts&t.firsts != 0
}

// mayHave: id may be one of the codes summed in s.
func (s codeSig) mayHave(id []byte) bool {
	return len(id) > 0 && s.lens&(1<<min(len(id), 63)) != 0 && s.firsts&(1<<(lowerTab[id[0]]%64)) != 0
}

func hasInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// appendLower appends an ASCII-lower-cased copy of b, up to cap(dst).
func appendLower(dst, b []byte) []byte {
	if n := cap(dst) - len(dst); len(b) > n {
		b = b[:n]
	}
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func containsAny(b []byte, needles []string) bool {
	for _, s := range needles {
		if indexStr(b, s) >= 0 {
			return true
		}
	}
	return false
}

// indexStr is bytes.Index for a string needle, without converting it.
func indexStr(b []byte, s string) int {
	n := len(s)
	if n == 0 {
		return 0
	}
	c := s[0]
	for i := 0; i+n <= len(b); {
		j := bytes.IndexByte(b[i:len(b)-n+1], c)
		if j < 0 {
			return -1
		}
		i += j
		if string(b[i:i+n]) == s {
			return i
		}
		i++
	}
	return -1
}

func equalFoldBS(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	// Upstreams spell their codes in lower case, as the tables do.
	return string(b) == s || foldEqualBS(b, s)
}

//go:noinline
func foldEqualBS(b []byte, s string) bool {
	for i := 0; i < len(b); i++ {
		if lowerTab[b[i]] != lowerTab[s[i]] {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// lowerTab is lowerASCII as a table, for loops where a branch a byte
// costs more than a load.
var lowerTab = func() (t [256]byte) {
	for c := range t {
		t[c] = lowerASCII(byte(c))
	}
	return t
}()

// Text rules are tried on every refusal, most of them failing. A set of
// the message's byte pairs lets a phrase whose pairs are not all present
// fail without a search; only plausible phrases are looked for.

type needle struct {
	s     string
	grams []uint16
}

// gramSlots is the size of a gramSet. A message of a hundred bytes fills
// a tenth of it, so a phrase's rarest pair rules most phrases out.
const gramSlots = 1024

// gramSet holds a byte a slot rather than a bit: setting one is then a
// single store, where a bit takes a load, an OR and a store that may wait
// on the one before to the same word. At a pair per byte of the message,
// that halves the cost of building the set, clearing the larger set
// included.
type gramSet [gramSlots]bool

func gramOf(a, b byte) uint16 { return (uint16(a)*31 + uint16(b)) % gramSlots }

// lower appends an ASCII-lower-cased copy of b (up to cap(dst)) and
// records its byte pairs.
func (g *gramSet) lower(dst, b []byte) []byte {
	if n := cap(dst) - len(dst); len(b) > n {
		b = b[:n]
	}
	start := len(dst)
	dst = dst[:start+len(b)]
	for d := dst[start:]; len(b) > 0; {
		if len(b) < 8 || len(d) < 8 {
			for i, c := range b {
				d[i] = lowerTab[c]
			}
			break
		}
		binary.LittleEndian.PutUint64(d, lower8(binary.LittleEndian.Uint64(b)))
		b, d = b[8:], d[8:]
	}
	g.add(dst[start:])
	return dst
}

// lower8 lower-cases the ASCII letters among eight bytes at once; the
// message is lower-cased on every refusal.
func lower8(x uint64) uint64 {
	const (
		low7 = 0x7f7f7f7f7f7f7f7f
		high = 0x8080808080808080
		geA  = 0x3f3f3f3f3f3f3f3f // 0x80-'A': the high bit is set from 'A' up
		gtZ  = 0x2525252525252525 // 0x80-'Z'-1: the high bit is set past 'Z'
	)
	h := x & low7 // no carry between bytes below
	upper := (h + geA) &^ (h + gtZ) &^ x & high
	return x | upper>>2 // 0x80>>2 is the case bit, 0x20
}

// add records the byte pairs of b.
func (g *gramSet) add(b []byte) {
	if len(b) < 2 {
		return
	}
	_ = g[0] // one nil check, not one a byte
	prev := uint(b[0])
	for _, c := range b[1:] {
		g[(prev*31+uint(c))%gramSlots] = true
		prev = uint(c)
	}
}

func (g *gramSet) mayHold(n *needle) bool {
	_ = g[0]
	for _, h := range n.grams {
		if !g[h] {
			return false
		}
	}
	return true
}

func compileNeedles(text []string) []needle {
	var out []needle
	for _, s := range text {
		n := needle{s: s}
		type pair struct {
			gram   uint16
			rarity int
		}
		var pairs []pair
		for i := 0; i+1 < len(s); i++ {
			pairs = append(pairs, pair{gramOf(s[i], s[i+1]), letterRarity(s[i]) + letterRarity(s[i+1])})
		}
		// Rarest pairs first: most phrases are absent from a message,
		// and a rare pair says so at the first look.
		slices.SortStableFunc(pairs, func(a, b pair) int { return b.rarity - a.rarity })
		for _, p := range pairs {
			if !slices.Contains(n.grams, p.gram) {
				n.grams = append(n.grams, p.gram)
			}
		}
		out = append(out, n)
	}
	return out
}

// letterRarity ranks a byte by how seldom it appears in English prose:
// the space and 'e' are everywhere, 'z' almost nowhere. Digits and
// punctuation count as rare.
func letterRarity(c byte) int {
	const byFrequency = " etaoinshrdlcumwfgypbvkjxqz"
	if i := strings.IndexByte(byFrequency, c); i >= 0 {
		return i
	}
	return len(byFrequency)
}

// holdsAny reports whether lower contains one of the needles.
func holdsAny(lower []byte, g *gramSet, ns []needle) bool {
	for i := range ns {
		if g.mayHold(&ns[i]) && indexStr(lower, ns[i].s) >= 0 {
			return true
		}
	}
	return false
}
