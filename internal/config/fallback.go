package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/subpool/subpool/proxy/policy"
)

// Strength tiers: how a model of one provider maps to a model of another.
const (
	TierStrong = "strong"
	TierMedium = "medium"
	TierFast   = "fast"
)

// tierOrder is the order a client's model is matched against the tier
// patterns: the narrow "-mini"/"-nano" names first, so that
// "gpt-5.1-codex-mini" is fast before any broader pattern claims it.
var tierOrder = []string{TierFast, TierStrong, TierMedium}

// Fallback is the [fallback] section: where a request may be served when
// no credential of its own provider can take it (docs/fallback.md).
type Fallback struct {
	// Enabled turns every ladder on or off. Default true: the built-in
	// ladders only ever use a provider the user has logged in to.
	Enabled bool
	// Ladders holds, per provider, the targets to try in order. A provider
	// without an entry has no fallback; an empty entry turns the built-in
	// one off.
	Ladders map[string][]Rung
	// Models holds, per provider, the model a fallback to it asks for at
	// each tier. A tier left out takes the provider's medium model (else
	// strong, else fast): a custom provider often has just one model.
	Models map[string]map[string]string
	// Tiers holds, per provider, the patterns that put a client's model of
	// that provider in a tier ('*' matches any run of characters), tried
	// fast, strong, medium. A model no pattern matches is in the tier that
	// names it in Models, else medium.
	Tiers map[string]map[string][]string
}

// Rung is one step of a ladder.
type Rung struct {
	// Match lists patterns of the client's model this rung is for; empty
	// means every model.
	Match []string
	// Provider serves the request.
	Provider string
	// Model is what Provider is asked for; "" means Provider's model at
	// the tier of the client's model.
	Model string
}

// Target is a rung resolved for one request.
type Target struct {
	Provider string
	Model    string
}

// DefaultFallback is the ladder that works with no config: each
// subscription falls back to the others, tier for tier. The model names
// are the current flagship of each tier (late 2025); they age, which is
// why [fallback.models.*] overrides them.
func DefaultFallback() Fallback {
	return Fallback{
		Enabled: true,
		Ladders: map[string][]Rung{
			Anthropic: {{Provider: OpenAI}, {Provider: Google}},
			OpenAI:    {{Provider: Anthropic}, {Provider: Google}},
			Google:    {{Provider: Anthropic}, {Provider: OpenAI}},
		},
		Models: map[string]map[string]string{
			Anthropic: {TierStrong: "claude-opus-4-5", TierMedium: "claude-sonnet-4-5", TierFast: "claude-haiku-4-5"},
			// gpt-5.1 and the codex models are served both by the API and
			// by the ChatGPT Codex backend, so one name fits every openai
			// credential. The codex models are tuned for tool-driven
			// coding turns, which is what a Claude Code detour carries.
			OpenAI: {TierStrong: "gpt-5.1", TierMedium: "gpt-5.1-codex", TierFast: "gpt-5.1-codex-mini"},
			// Served both by the Gemini API and by Code Assist.
			Google: {TierStrong: "gemini-2.5-pro", TierMedium: "gemini-2.5-flash", TierFast: "gemini-2.5-flash-lite"},
		},
		Tiers: map[string]map[string][]string{
			Anthropic: {
				TierStrong: {"*opus*"},
				TierMedium: {"*sonnet*"},
				TierFast:   {"*haiku*"},
			},
			OpenAI: {
				TierStrong: {"gpt-5", "gpt-5.1", "o1", "o3", "*-pro", "*-pro-*", "*-max", "*-max-*"},
				TierFast:   {"*-mini", "*-mini-*", "*-nano", "*-nano-*"},
			},
			Google: {
				TierStrong: {"*-pro", "*-pro-*"},
				TierFast:   {"*-flash-lite", "*-flash-lite-*"},
			},
		},
	}
}

// Targets is the ladder for a request to provider for model: each rung
// whose Match takes model, with its model resolved. Nil when fallback is
// off or provider has no ladder.
func (f Fallback) Targets(provider, model string) []Target {
	if !f.Enabled {
		return nil
	}
	var out []Target
	for _, r := range f.Ladders[provider] {
		if len(r.Match) > 0 && !slices.ContainsFunc(r.Match, func(p string) bool { return policy.Glob(p, model) }) {
			continue
		}
		m := r.Model
		if m == "" {
			m = f.modelAt(r.Provider, f.Tier(provider, model))
		}
		if m != "" {
			out = append(out, Target{Provider: r.Provider, Model: m})
		}
	}
	return out
}

// Tier says which tier model, a model of provider, is in: the first
// tier whose patterns match, else the tier that names it in Models, else
// medium. Patterns come first so that a user's tiers table always wins.
func (f Fallback) Tier(provider, model string) string {
	for _, t := range tierOrder {
		if slices.ContainsFunc(f.Tiers[provider][t], func(p string) bool { return policy.Glob(p, model) }) {
			return t
		}
	}
	for _, t := range tierOrder {
		if m := f.Models[provider][t]; m != "" && m == model {
			return t
		}
	}
	return TierMedium
}

// modelAt is provider's model for tier, or the nearest tier it has.
func (f Fallback) modelAt(provider, tier string) string {
	ms := f.Models[provider]
	for _, t := range []string{tier, TierMedium, TierStrong, TierFast} {
		if m := ms[t]; m != "" {
			return m
		}
	}
	return ""
}

// fallbackFile is the [fallback] table as written. Its keys include
// provider names, so parseFallback reads it by hand; as an Unmarshaler it
// tells the decoder that it used every key under it, and the unknown ones
// are parseFallback's to report, with a better message.
type fallbackFile map[string]any

func (f *fallbackFile) UnmarshalTOML(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return errors.New("fallback must be a table: [fallback]")
	}
	*f = m
	return nil
}

// parseFallback validates the [fallback] table over the defaults. raw is
// the table as the TOML decoder gave it; provs are the configured
// providers, which every name in it must be.
func parseFallback(raw map[string]any, provs map[string]Provider, bad func(key, format string, a ...any) error) (Fallback, error) {
	f := DefaultFallback()
	if raw == nil {
		return f, nil
	}
	known := func(key, name string) error {
		if _, ok := provs[name]; !ok {
			return bad(key, "%q is not a provider; define [providers.%s] first, or check the spelling", name, name)
		}
		return nil
	}
	for _, k := range sortedKeys(raw) {
		v := raw[k]
		key := "fallback." + k
		switch k {
		case "enabled":
			b, ok := v.(bool)
			if !ok {
				return f, bad(key, "must be true or false")
			}
			f.Enabled = b
		case "models":
			err := eachTier(key, "[fallback.models.openai]", v, known, bad, func(prov, t, tkey string, val any) error {
				m, ok := val.(string)
				if !ok || strings.TrimSpace(m) == "" || strings.Contains(m, "*") {
					return bad(tkey, "must be a model name, e.g. \"gpt-5.1\"")
				}
				ms := maps.Clone(f.Models[prov]) // the defaults stay as they are
				if ms == nil {
					ms = map[string]string{}
				}
				ms[t] = m
				f.Models[prov] = ms
				return nil
			})
			if err != nil {
				return f, err
			}
		case "tiers":
			err := eachTier(key, "[fallback.tiers.openai]", v, known, bad, func(prov, t, tkey string, val any) error {
				ps, err := patterns(tkey, val, bad)
				if err != nil {
					return err
				}
				ts := maps.Clone(f.Tiers[prov])
				if ts == nil {
					ts = map[string][]string{}
				}
				ts[t] = ps
				f.Tiers[prov] = ts
				return nil
			})
			if err != nil {
				return f, err
			}
		default:
			if err := known(key, k); err != nil {
				return f, err
			}
			rungs, err := parseLadder(key, k, v, provs, bad)
			if err != nil {
				return f, err
			}
			f.Ladders[k] = rungs
		}
	}
	// Checked after every table is read: a rung may rely on models given
	// further down the file.
	for _, src := range sortedKeys(f.Ladders) {
		for i, r := range f.Ladders[src] {
			if r.Model == "" && f.modelAt(r.Provider, TierMedium) == "" {
				return f, bad(fmt.Sprintf("fallback.%s[%d].model", src, i), "missing: %s has no [fallback.models.%s] to pick its model by tier; name the model here", r.Provider, r.Provider)
			}
		}
	}
	return f, nil
}

// eachTier walks a [fallback.models] or [fallback.tiers] table: a table
// per known provider, each a table of tiers, handing visit every tier's
// value with its key for messages.
func eachTier(key, example string, v any, known func(key, name string) error, bad func(key, format string, a ...any) error,
	visit func(provider, tier, tkey string, val any) error) error {
	tbl, ok := v.(map[string]any)
	if !ok {
		return bad(key, "must be a table per provider, e.g. %s", example)
	}
	for _, name := range sortedKeys(tbl) {
		pkey := key + "." + name
		if err := known(pkey, name); err != nil {
			return err
		}
		tiers, ok := tbl[name].(map[string]any)
		if !ok {
			return bad(pkey, "must be a table of tiers: strong, medium, fast")
		}
		for _, t := range sortedKeys(tiers) {
			tkey := pkey + "." + t
			if err := checkTier(tkey, t, bad); err != nil {
				return err
			}
			if err := visit(name, t, tkey, tiers[t]); err != nil {
				return err
			}
		}
	}
	return nil
}

func parseLadder(key, src string, v any, provs map[string]Provider, bad func(key, format string, a ...any) error) ([]Rung, error) {
	var items []map[string]any
	switch x := v.(type) {
	case []map[string]any:
		items = x
	case []any:
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, bad(fmt.Sprintf("%s[%d]", key, i), "must be a table with provider (and model, match)")
			}
			items = append(items, m)
		}
	default:
		return nil, bad(key, "must be a list of [[%s]] tables, each with provider (and model, match)", key)
	}
	rungs := []Rung{}
	for i, m := range items {
		rkey := fmt.Sprintf("%s[%d]", key, i)
		var r Rung
		for _, k := range sortedKeys(m) {
			fkey := rkey + "." + k
			switch k {
			case "provider":
				s, ok := m[k].(string)
				if !ok {
					return nil, bad(fkey, "must be a provider name")
				}
				if _, ok := provs[s]; !ok {
					return nil, bad(fkey, "%q is not a provider; define [providers.%s] first, or check the spelling", s, s)
				}
				if s == src {
					return nil, bad(fkey, "%s cannot fall back to itself; rotation and waits already cover its own credentials", s)
				}
				r.Provider = s
			case "model":
				s, ok := m[k].(string)
				if !ok || strings.TrimSpace(s) == "" || strings.Contains(s, "*") {
					return nil, bad(fkey, "must be a model name, e.g. \"glm-4.6\" (leave it out to map by tier)")
				}
				r.Model = s
			case "match":
				ps, err := patterns(fkey, m[k], bad)
				if err != nil {
					return nil, err
				}
				r.Match = ps
			default:
				return nil, bad(fkey, "unknown key (a rung has provider, model and match)")
			}
		}
		if r.Provider == "" {
			return nil, bad(rkey+".provider", "missing: which provider serves this rung?")
		}
		rungs = append(rungs, r)
	}
	return rungs, nil
}

func checkTier(key, t string, bad func(key, format string, a ...any) error) error {
	switch t {
	case TierStrong, TierMedium, TierFast:
		return nil
	}
	return bad(key, "unknown tier (use strong, medium or fast)")
}

// patterns reads a string or a list of strings.
func patterns(key string, v any, bad func(key, format string, a ...any) error) ([]string, error) {
	var out []string
	switch x := v.(type) {
	case string:
		out = []string{x}
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, bad(key, "must be a model pattern or a list of them, e.g. [\"claude-opus-*\"]")
			}
			out = append(out, s)
		}
	default:
		return nil, bad(key, "must be a model pattern or a list of them, e.g. [\"claude-opus-*\"]")
	}
	for _, s := range out {
		if strings.TrimSpace(s) == "" {
			return nil, bad(key, "an empty pattern matches nothing; use \"*\" for every model")
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
