package classify

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

// decide turns a parsed refusal into a verdict: the table says the class,
// the headers and body say how far it reaches and when it lifts.
func (p *Profile) decide(status int, h http.Header, f *fields, now time.Time, stream bool) Verdict {
	lower := strings.ToLower(f.text)
	if p.zai {
		f.zaiCode()
	}
	r, code := p.match(status, f, lower)
	if code == "" {
		code = f.primary()
	}
	class, why := r.class, r.why
	v := Verdict{Class: class, Scope: r.scope, Status: status, Tool: r.tool && class == ClientError}
	switch class {
	case RateLimit, Capacity, Transient, Payment:
		var hs headerState
		hs.read(h)
		if class == RateLimit {
			v.Scope = p.rateScope(&hs, f, lower)
		}
		v.RetryAfter = p.retryAfter(&hs, f, lower, now)
	}
	v.Reason = buildReason(status, stream, code, why, f.msg)
	return v
}

// match finds the first table rule that fits, else judges by status. It
// returns the identifier that matched, for the reason line.
func (p *Profile) match(status int, f *fields, lower string) (rule, string) {
	for _, r := range p.rules {
		if len(r.status) > 0 && !slices.Contains(r.status, status) {
			continue
		}
		var id string
		if len(r.codes) > 0 {
			if id = f.find(r.codes); id == "" {
				continue
			}
		}
		if len(r.text) > 0 && !containsAny(lower, r.text) {
			continue
		}
		if r.gq != gqNone && !googleQuotaHolds(r.gq, f) {
			continue
		}
		return r, id
	}
	c, s, w := byStatus(status)
	return rule{class: c, scope: s, why: w}, ""
}

// rateScope says how far a rate limit reaches. An egress-limited provider
// counts per IP address, so every credential behind it is spent. A model
// scope needs the upstream to name the exhausted limit (an Anthropic
// per-model window, an OpenAI message naming the model, Codex's
// x-codex-active-limit naming a per-model family that is spent while the
// plan's own windows are not, a Google quota counted per model or naming
// its model): reading an
// ambiguous 429 as model-scoped would keep offering a credential whose
// shared limit is spent, a wasted call per model, while reading it
// credential-wide at worst rests a credential longer than needed.
func (p *Profile) rateScope(hs *headerState, f *fields, lower string) Scope {
	if p.LimitScope == LimitEgress {
		return ScopeProvider
	}
	if hs.modelLimited() || hs.codexFamilyLimited() || f.find(modelLimitNames) != "" || containsAny(lower, modelLimitNames) ||
		openAIModelLimit(lower) || f.g.namesModel() {
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

// openAIModelLimit reads OpenAI's "Rate limit reached for gpt-4.1 in
// organization org-… on tokens per min": OpenAI limits are per model, and
// this message names the one that is spent. Tier names such as
// "10KTPM-200RPM" (older messages) start with a digit and are not models.
func openAIModelLimit(lower string) bool {
	_, rest, ok := strings.Cut(lower, "rate limit reached for ")
	if !ok {
		return false
	}
	model, _, ok := strings.Cut(rest, " in organization")
	return ok && model != "" && model[0] >= 'a' && model[0] <= 'z' && !strings.Contains(model, " ")
}

// zaiCode lifts z.ai's business code out of a "[1308][message][id]"
// message when the body carried no code of its own.
func (f *fields) zaiCode() {
	for _, id := range f.ids {
		if len(id.s) == 4 && isDigits(id.s) {
			return
		}
	}
	if m := f.msg; len(m) >= 6 && m[0] == '[' && m[5] == ']' && isDigits(m[1:5]) {
		f.addID(m[1:5], rankCode)
		slices.SortStableFunc(f.ids, func(a, b ident) int { return a.rank - b.rank })
	}
}

func containsAny(s string, needles []string) bool {
	for _, n := range needles {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}
