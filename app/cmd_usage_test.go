package app

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/subpool/subpool/internal/freeport"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/history"
	"github.com/subpool/subpool/proxy/api"
)

// historyHome is a home with a seeded history.db: three models, API-key and
// subscription credentials, one refusal.
func historyHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	cfg := fmt.Sprintf("listen = %q\n[keychain]\nbackend = \"file\"\n", freeport.Addr(t))
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := history.Open(filepath.Join(home, history.FileName), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, e := range []api.Event{
		{Model: "claude-sonnet-4-5", CredentialKind: api.KindAPIKey, Class: "ok", InputTokens: 1_000_000, OutputTokens: 100_000},
		{Model: "claude-sonnet-4-5", CredentialKind: api.KindAPIKey, Class: "ok", InputTokens: 1_000_000, CacheReadTokens: 1_000_000},
		{Model: "gpt-5.1", CredentialKind: api.KindOAuth, Class: "ok", InputTokens: 50, OutputTokens: 60, CacheReadTokens: 70},
		{Model: "gpt-5.1", CredentialKind: api.KindOAuth, Class: "rate_limit", Status: 429, WaitedMS: 2000},
		// Older than the window asked for: left out.
		{Model: "claude-sonnet-4-5", CredentialKind: api.KindAPIKey, Class: "ok", InputTokens: 9, Time: now.Add(-10 * 24 * time.Hour)},
	} {
		e.Type, e.Provider = api.EventRequestFinished, "anthropic"
		if e.Time.IsZero() {
			e.Time = now.Add(-time.Hour)
		}
		db.Emit(e)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return home
}

func checkModelReport(t *testing.T, out string) {
	t.Helper()
	var rep api.UsageReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	got := map[string]string{}
	for _, r := range rep.Rows {
		got[r.Key] = fmt.Sprintf("n=%d in=%d out=%d read=%d refusals=%v waited=%d cost=%.2f included=%d",
			r.Requests, r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.Refusals, r.WaitedMS, r.CostUSD, r.Included)
	}
	// Sonnet: 2M in at $3, 100k out at $15, 1M cache read at $0.30.
	want := map[string]string{
		"claude-sonnet-4-5": "n=2 in=2000000 out=100000 read=1000000 refusals=map[] waited=0 cost=7.80 included=0",
		"gpt-5.1":           "n=2 in=50 out=60 read=70 refusals=map[rate_limit:1] waited=2000 cost=0.00 included=2",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("by model:\n got %v\nwant %v", got, want)
	}
	if rep.By != "model" || rep.Total.Requests != 4 {
		t.Fatalf("report %+v", rep)
	}
}

func TestUsageFromFileWithNoProxy(t *testing.T) {
	home := historyHome(t)
	code, out, errs := cli(t, "", "usage", "--home", home, "--since", "7d", "--by", "model", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkModelReport(t, out)

	code, out, errs = cli(t, "", "usage", "--home", home, "--since", "7d", "--by", "model", "--csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"key", "label", "requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "refusals", "waited_ms", "cost_usd", "included", "unpriced"},
		{"claude-sonnet-4-5", "", "2", "2000000", "100000", "1000000", "0", "", "0", "7.800000", "0", "0"},
		{"gpt-5.1", "", "2", "50", "60", "70", "0", "rate_limit=1", "2000", "0.000000", "2", "0"},
	}
	if fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Fatalf("csv:\n got %v\nwant %v", recs, want)
	}

	// A longer window takes the old row too.
	_, out, _ = cli(t, "", "usage", "--home", home, "--since", "30d", "--by", "provider", "--json")
	var rep api.UsageReport
	json.Unmarshal([]byte(out), &rep)
	if rep.Total.Requests != 5 {
		t.Fatalf("30 days: %d requests, want 5", rep.Total.Requests)
	}

	// The table a person reads: subscriptions never get a dollar figure.
	_, out, _ = cli(t, "", "usage", "--home", home, "--since", "7d", "--by", "model")
	if !strings.Contains(out, "$7.80") || !strings.Contains(out, "included") || strings.Contains(out, "$0.00") {
		t.Fatalf("table:\n%s", out)
	}
}

func TestUsageThroughRunningProxy(t *testing.T) {
	home := historyHome(t)
	s := startHome(t, home, &logBuf{})
	// A row only the running proxy has seen so far still counts: the
	// verb asks the proxy, which commits before answering.
	s.History().Emit(api.Event{Type: api.EventRequestFinished, Provider: "openai", Model: "gpt-5.1", Class: "ok", OutputTokens: 1})
	if err := s.History().Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "", "usage", "--home", home, "--since", "7d", "--by", "provider", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep api.UsageReport
	json.Unmarshal([]byte(out), &rep)
	if len(rep.Rows) != 2 || rep.Rows[1].Key != "openai" || rep.Total.Requests != 5 {
		t.Fatalf("by provider through the proxy: %s", out)
	}
	code, out, errs = cli(t, "", "history", "--home", home, "-n", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var page api.HistoryPage
	json.Unmarshal([]byte(out), &page)
	if len(page.Entries) != 2 || page.Entries[0].Provider != "openai" || page.Next == 0 {
		t.Fatalf("history through the proxy: %s", out)
	}
}

func TestHistoryVerbFromFile(t *testing.T) {
	home := historyHome(t)
	code, out, errs := cli(t, "", "history", "--home", home, "--class", "rate_limit")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "rate_limit") || !strings.Contains(lines[1], "429") {
		t.Fatalf("history --class rate_limit:\n%s", out)
	}
}

func TestUsageWithoutHistory(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[keychain]\nbackend = \"file\"\n[history]\nenabled = false\n"), 0o600)
	code, _, errs := cli(t, "", "usage", "--home", home)
	if code != 1 || !strings.Contains(errs, "enabled = false") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
