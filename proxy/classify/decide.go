package classify

import (
	"bytes"
	"net/http"
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
			if id = f.find(r.codes); id == nil {
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

var modelLimitNeedles = compileNeedles(modelLimitNames)

func namesModelLimit(f *fields, lower []byte, g *gramSet) bool {
	if f.find(modelLimitNames) != nil || holdsAny(lower, g, modelLimitNeedles) {
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

func (f *fields) find(codes []string) []byte {
	for i := 0; i < f.n; i++ {
		id := f.ids[i]
		for _, c := range codes {
			if equalFoldBS(id, c) {
				return id
			}
		}
	}
	return nil
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
	for i := 0; i < len(b); i++ {
		if lowerASCII(b[i]) != lowerASCII(s[i]) {
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

// Text rules are tried on every refusal, most of them failing. A set of
// the message's byte pairs lets a phrase whose pairs are not all present
// fail without a search; only plausible phrases are looked for.

type needle struct {
	s     string
	grams []uint16
}

const gramBits = 2048

type gramSet [gramBits / 64]uint64

func gramOf(a, b byte) uint16 { return (uint16(a)*31 + uint16(b)) % gramBits }

// lower appends an ASCII-lower-cased copy of b (up to cap(dst)) and
// records its byte pairs.
func (g *gramSet) lower(dst, b []byte) []byte {
	if n := cap(dst) - len(dst); len(b) > n {
		b = b[:n]
	}
	var prev byte
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if i > 0 {
			h := gramOf(prev, c)
			g[h/64] |= 1 << (h % 64)
		}
		dst = append(dst, c)
		prev = c
	}
	return dst
}

func (g *gramSet) mayHold(n *needle) bool {
	for _, h := range n.grams {
		if g[h/64]&(1<<(h%64)) == 0 {
			return false
		}
	}
	return true
}

func compileNeedles(text []string) []needle {
	var out []needle
	for _, s := range text {
		n := needle{s: s}
		for i := 0; i+1 < len(s); i++ {
			n.grams = append(n.grams, gramOf(s[i], s[i+1]))
		}
		out = append(out, n)
	}
	return out
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
