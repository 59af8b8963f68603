package app

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/subpool/subpool/internal/history"
	"github.com/subpool/subpool/proxy/api"
)

// The demo keeps its history in its own home (never the user's),
// cleared when it stops. Its live traffic lands there like
// any proxy's; a made-up past month is written first, so the Usage tab
// has a day and a month to show from the first second, and the running
// hour grows on top of it.

// demoPrompt is what each live demo request asks: about 400 tokens, as
// the sim counts them (a byte in four), so the running hour grows on the
// chart by a few percent of a busy past hour every minute.
var demoPrompt = strings.Repeat("Refactor the pool so a cooling credential is skipped. ", 30)

// demoUsage is how a demo credential is used in the made-up past: its
// share of the requests, the client app that sends them, and whether it
// speaks through Claude's cache (so its rows carry cache reads).
var demoUsage = map[string]struct {
	share  float64
	app    string
	model  string
	cached bool
}{
	"claude-max":    {0.34, "claude-code", "claude-sonnet-4-5", true},
	"claude-pro":    {0.17, "claude-code", "claude-sonnet-4-5", true},
	"anthropic-key": {0.08, "aider", "claude-haiku-4-5", false},
	"chatgpt-pro":   {0.19, "codex", "gpt-5-codex", false},
	"openai-key":    {0.07, "opencode", "gpt-5.1", false},
	"google-ai-pro": {0.10, "gemini-cli", "gemini-2.5-pro", false},
	"gemini-key":    {0.05, "gemini-cli", "gemini-2.5-flash", false},
}

// fillDemoHistory writes a plausible past month of requests before now:
// busier in working hours, a few refusals. Seeded, so every demo (and its
// screenshot) shows the same past.
func fillDemoHistory(ctx context.Context, db *history.DB, creds []demoCred, ids map[string]string, now time.Time) error {
	rng := rand.New(rand.NewPCG(16, 2026))
	start := now.Add(-30 * 24 * time.Hour).Truncate(time.Hour)
	for t := start; t.Before(now.Truncate(time.Hour)); t = t.Add(time.Hour) {
		n := demoRequestsIn(t.Local(), rng)
		for range n {
			at := t.Add(time.Duration(rng.Int64N(int64(time.Hour))))
			c := pickDemoCred(creds, rng)
			db.Emit(demoRow(c, ids[c.label], at, rng))
		}
	}
	return db.Sync(ctx)
}

// demoRequestsIn: a person's working hours, lighter at weekends, almost
// nothing at night.
func demoRequestsIn(t time.Time, rng *rand.Rand) int {
	base := 1
	if h := t.Hour(); h >= 9 && h < 19 {
		base = 9
	} else if h >= 7 && h < 23 {
		base = 4
	}
	if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
		base /= 3
	}
	return rng.IntN(base + 1)
}

func pickDemoCred(creds []demoCred, rng *rand.Rand) demoCred {
	x := rng.Float64()
	for _, c := range creds {
		x -= demoUsage[c.label].share
		if x < 0 {
			return c
		}
	}
	return creds[0]
}

func demoRow(c demoCred, id string, at time.Time, rng *rand.Rand) api.Event {
	u := demoUsage[c.label]
	kind := api.KindOAuth
	if c.key != "" {
		kind = api.KindAPIKey
	}
	e := api.Event{Type: api.EventRequestFinished, Time: at, Provider: c.provider, CredentialID: id, Label: c.label,
		CredentialKind: kind, Model: u.model, Status: 200, Class: "ok", Attempts: 1, Client: "default", ClientApp: u.app,
		LatencyMS: 2000 + rng.Int64N(30_000)}
	e.TTFBMS = 300 + rng.Int64N(1500)
	e.InputTokens = 500 + rng.Int64N(6000)
	e.OutputTokens = 100 + rng.Int64N(2500)
	if u.cached {
		e.CacheReadTokens = 5_000 + rng.Int64N(60_000)
		e.CacheWriteTokens = rng.Int64N(4_000)
	}
	switch r := rng.IntN(40); {
	case r == 0:
		e.Status, e.Class, e.LatencyMS = 429, "rate_limit", 300
		e.InputTokens, e.OutputTokens, e.CacheReadTokens, e.CacheWriteTokens = 0, 0, 0, 0
	case r == 1 && (c.provider == "anthropic" || c.provider == "google"):
		// Overloaded: Anthropic's 529, Google's 503 UNAVAILABLE.
		e.Status, e.Class, e.WaitedMS = 529, "capacity", 12_000
		if c.provider == "google" {
			e.Status = 503
		}
		e.InputTokens, e.OutputTokens, e.CacheReadTokens, e.CacheWriteTokens = 0, 0, 0, 0
	}
	return e
}
