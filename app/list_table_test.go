package app

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// `subpool list` with Gemini beside the others: a Google login kept for
// Gemini CLI, bound by one model's day, and a Gemini key held to a pace
// learned from bare 429s.
func TestListShowsGeminiAndPaces(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	st := api.Status{Now: now, Providers: []api.ProviderStatus{
		{Name: "anthropic", Credentials: []api.CredentialStatus{
			{ID: "anthropic-1a", Provider: "anthropic", Label: "claude-max", Kind: api.KindOAuth, State: api.StateReady, OwnTool: api.ToolClaudeCode},
		}},
		{Name: "google", Credentials: []api.CredentialStatus{
			{ID: "google-2b", Provider: "google", Label: "google-ai-pro", Kind: api.KindOAuth, State: api.StateReady, OwnTool: api.ToolGeminiCLI,
				Usage: &api.Utilization{Windows: []api.Window{
					{Name: "1d_gemini-2.5-pro", Used: 0.09, ResetsAt: at(20 * time.Hour)},
					{Name: "1d_gemini-2.5-flash", Used: 0.39, ResetsAt: at(20 * time.Hour), Binding: true},
				}}, Counters: api.Counters{Requests: 12}},
			{ID: "google-3c", Provider: "google", Label: "gemini-key", Kind: api.KindAPIKey, State: api.StateReady,
				Paces:    []api.Pace{{Scope: "credential", Requests: 30, WindowMS: 300_000, Next: at(39*time.Second + 200*time.Millisecond)}},
				Counters: api.Counters{Requests: 31}},
			{ID: "google-4d", Provider: "google", Label: "gemini-key-2", Kind: api.KindAPIKey, State: api.StateReady,
				Paces: []api.Pace{{Scope: "model", Model: "gemini-2.5-pro", Requests: 5, WindowMS: 296_000},
					{Scope: "credential", Requests: 2}}},
		}},
	}}
	var out bytes.Buffer
	printTable(&out, st)
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		f := strings.Split(line, "  ")
		var cells []string
		for _, c := range f {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		rows[cells[0]] = cells
	}
	reset := now.Add(20 * time.Hour).Local().Format("15:04")
	for id, want := range map[string][]string{
		"anthropic-1a": {"anthropic-1a", "anthropic", "claude-max", "oauth", "Claude Code", "ready", "-", "-", "0"},
		"google-2b":    {"google-2b", "google", "google-ai-pro", "oauth", "Gemini CLI", "ready", "-", "1d_gemini-2.5-flash 39% ↻" + reset, "12"},
		"google-3c":    {"google-3c", "google", "gemini-key", "api_key", "all tools", "ready (paced · 30 per 5m · next 40s)", "-", "-", "31"},
		"google-4d": {"google-4d", "google", "gemini-key-2", "api_key", "all tools",
			"ready (paced gemini-2.5-pro · 5 per 4m56s; paced · 2 a window, its length not learned yet)", "-", "-", "0"},
	} {
		if got := rows[id]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s:\n got %q\nwant %q", id, got, want)
		}
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute: "5m", 296 * time.Second: "4m56s", 39*time.Second + time.Millisecond: "40s",
		2 * time.Hour: "2h", 2*time.Hour + 30*time.Minute: "2h30m", 61 * time.Minute: "1h1m", time.Millisecond: "1s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
