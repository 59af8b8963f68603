package history

import (
	"sort"
	"strings"
)

// Price is USD per million tokens of each kind (tokens.Usage's meaning:
// Input is uncached prompt tokens).
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// DefaultPrices are the public list prices for API keys, standard tier,
// short context. A model matches the longest name here that it starts with,
// so dated snapshots ("claude-sonnet-4-5-20250929") find their family.
// [prices] in config.toml overrides or adds entries.
//
// Anthropic: taken 2026-11-25 from the Claude pricing page
// (docs.claude.com/en/docs/about-claude/pricing, as mirrored in public
// guides dated April–May 2026): cache write is the 5-minute write (1.25x
// input), cache read 0.1x input.
//
// OpenAI: taken 2026-11-25 from openai.com/api/pricing (as quoted by
// public guides dated June 2026) and, for gpt-5.2/5.3-codex, the Codex
// rate card (May 2026, 25 credits = $1). OpenAI charges nothing extra to
// write its cache, so CacheWrite is 0.
//
// Google: taken 2026-12-02 from ai.google.dev/gemini-api/docs/pricing (as
// quoted by public guides of 2026), prompts up to 200K tokens; a cache
// read costs 0.1x input, and Google bills cache storage by the hour rather
// than a write, so CacheWrite is 0. Thoughts are billed as output.
var DefaultPrices = map[string]Price{
	"gemini-3.1-pro":        {Input: 2, Output: 12, CacheRead: 0.20},
	"gemini-3-pro":          {Input: 2, Output: 12, CacheRead: 0.20},
	"gemini-3-flash":        {Input: 0.50, Output: 3, CacheRead: 0.05},
	"gemini-3.1-flash-lite": {Input: 0.25, Output: 1.50, CacheRead: 0.025},
	"gemini-2.5-pro":        {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gemini-2.5-flash":      {Input: 0.30, Output: 2.50, CacheRead: 0.03},
	"gemini-2.5-flash-lite": {Input: 0.10, Output: 0.40, CacheRead: 0.01},
	"claude-opus-4-7":       {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-6":       {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-5":       {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-1":       {Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-opus-4":         {Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-sonnet-4":       {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}, // 4, 4.5, 4.6
	"claude-haiku-4-5":      {Input: 1, Output: 5, CacheRead: 0.10, CacheWrite: 1.25},
	"claude-3-5-haiku":      {Input: 0.80, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	"claude-3-haiku":        {Input: 0.25, Output: 1.25, CacheRead: 0.03, CacheWrite: 0.30},
	"gpt-5.5":               {Input: 5, Output: 30, CacheRead: 0.50},
	"gpt-5.5-pro":           {Input: 30, Output: 180},
	"gpt-5.4":               {Input: 2.50, Output: 15, CacheRead: 0.25},
	"gpt-5.4-mini":          {Input: 0.75, Output: 4.50, CacheRead: 0.075},
	"gpt-5.4-nano":          {Input: 0.20, Output: 1.25, CacheRead: 0.02},
	"gpt-5.4-pro":           {Input: 30, Output: 180},
	"gpt-5.3-codex":         {Input: 1.75, Output: 14, CacheRead: 0.175},
	"gpt-5.2":               {Input: 1.75, Output: 14, CacheRead: 0.175},
	"gpt-5.1":               {Input: 1.25, Output: 10, CacheRead: 0.125}, // and gpt-5.1-codex
	"gpt-5.1-codex-mini":    {Input: 0.25, Output: 2, CacheRead: 0.025},
	"gpt-5":                 {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5-mini":            {Input: 0.25, Output: 2, CacheRead: 0.025},
	"gpt-5-nano":            {Input: 0.05, Output: 0.40, CacheRead: 0.005},
	"gpt-4.1":               {Input: 2, Output: 8, CacheRead: 0.50},
	"gpt-4.1-mini":          {Input: 0.40, Output: 1.60, CacheRead: 0.10},
	"gpt-4.1-nano":          {Input: 0.10, Output: 0.40, CacheRead: 0.025},
	"gpt-4o":                {Input: 2.50, Output: 10, CacheRead: 1.25},
	"gpt-4o-mini":           {Input: 0.15, Output: 0.60, CacheRead: 0.075},
	"o3":                    {Input: 2, Output: 8, CacheRead: 0.50},
	"o3-pro":                {Input: 20, Output: 80},
	"o4-mini":               {Input: 1.10, Output: 4.40, CacheRead: 0.275},
}

// prices looks up a model's price: exact name, else the longest name the
// model starts with (at a '-' or '.' boundary or a date suffix).
type prices struct {
	exact map[string]Price
	names []string // longest first
}

func newPrices(overrides map[string]Price) *prices {
	p := &prices{exact: make(map[string]Price, len(DefaultPrices)+len(overrides))}
	for k, v := range DefaultPrices {
		p.exact[k] = v
	}
	for k, v := range overrides {
		p.exact[strings.ToLower(k)] = v
	}
	for k := range p.exact {
		p.names = append(p.names, k)
	}
	sort.Slice(p.names, func(i, j int) bool {
		if len(p.names[i]) != len(p.names[j]) {
			return len(p.names[i]) > len(p.names[j])
		}
		return p.names[i] < p.names[j]
	})
	return p
}

func (p *prices) lookup(model string) (Price, bool) {
	model = strings.ToLower(model)
	if pr, ok := p.exact[model]; ok {
		return pr, true
	}
	for _, n := range p.names {
		if rest, ok := strings.CutPrefix(model, n); ok && (rest[0] == '-' || rest[0] == '@') {
			return p.exact[n], true
		}
	}
	return Price{}, false
}

// cost is the estimated USD for usage at price.
func (p Price) cost(in, out, cacheRead, cacheWrite int64) float64 {
	return (float64(in)*p.Input + float64(out)*p.Output + float64(cacheRead)*p.CacheRead + float64(cacheWrite)*p.CacheWrite) / 1e6
}
