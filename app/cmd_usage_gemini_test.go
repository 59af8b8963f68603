package app

import (
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

// `subpool usage` counts Gemini like the others: by provider the google
// pool, by app Gemini CLI; its key's tokens priced, its login's included.
func TestUsageByProviderAndAppWithGemini(t *testing.T) {
	home := t.TempDir()
	cfg := fmt.Sprintf("listen = %q\n[keychain]\nbackend = \"file\"\n", freeport.Addr(t))
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := history.Open(filepath.Join(home, history.FileName), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []api.Event{
		{Provider: "anthropic", ClientApp: "claude-code", Model: "claude-sonnet-4-5", CredentialKind: api.KindOAuth, Class: "ok", InputTokens: 500},
		{Provider: "google", ClientApp: "gemini-cli", Model: "gemini-2.5-flash", CredentialKind: api.KindAPIKey, Class: "ok",
			InputTokens: 1_000_000, OutputTokens: 100_000},
		{Provider: "google", ClientApp: "gemini-cli", Model: "gemini-2.5-pro", CredentialKind: api.KindOAuth, Class: "ok", InputTokens: 700, OutputTokens: 80},
		{Provider: "google", ClientApp: "gemini-cli", Model: "gemini-2.5-pro", CredentialKind: api.KindOAuth, Class: "capacity", Status: 503, WaitedMS: 12_000},
	} {
		e.Type, e.Time = api.EventRequestFinished, time.Now().Add(-time.Hour)
		db.Emit(e)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		by   string
		want map[string]string
	}{
		{"provider", map[string]string{
			"anthropic": "n=1 in=500 out=0 refusals=map[] cost=0.00 included=1",
			// Flash: 1M in at $0.30, 100k out at $2.50.
			"google": "n=3 in=1000700 out=100080 refusals=map[capacity:1] cost=0.55 included=2",
		}},
		{"app", map[string]string{
			"claude-code": "n=1 in=500 out=0 refusals=map[] cost=0.00 included=1",
			"gemini-cli":  "n=3 in=1000700 out=100080 refusals=map[capacity:1] cost=0.55 included=2",
		}},
	} {
		code, out, errs := cli(t, "", "usage", "--home", home, "--since", "1d", "--by", c.by, "--json")
		if code != 0 {
			t.Fatalf("by %s: exit %d: %s", c.by, code, errs)
		}
		var rep api.UsageReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range rep.Rows {
			got[r.Key] = fmt.Sprintf("n=%d in=%d out=%d refusals=%v cost=%.2f included=%d",
				r.Requests, r.InputTokens, r.OutputTokens, r.Refusals, r.CostUSD, r.Included)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("by %s:\n got %v\nwant %v", c.by, got, c.want)
		}
	}

	// The table a person reads: Gemini's key priced, its login included,
	// the overload's wait counted.
	_, out, _ := cli(t, "", "usage", "--home", home, "--since", "1d", "--by", "app")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "gemini-cli") {
			line = l
		}
	}
	for _, want := range []string{"$0.55 + included", "capacity 1", "12s"} {
		if !strings.Contains(line, want) {
			t.Errorf("no %q in the gemini-cli line %q of\n%s", want, line, out)
		}
	}
}
