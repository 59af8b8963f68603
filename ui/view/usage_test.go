package view

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/history"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// usageNow is mid-hour, so the running hour and the bars before it differ.
var usageNow = time.Date(2026, 11, 20, 14, 30, 0, 0, time.UTC)

// dbSource reads a real history database the way the admin client reads
// the proxy's.
type dbSource struct{ *history.DB }

func (s dbSource) History(ctx context.Context, q api.HistoryQuery) (api.HistoryPage, error) {
	return s.List(ctx, q)
}

func finishedAt(ago time.Duration, id, label, kind string, in, out int64) api.Event {
	return api.Event{Type: api.EventRequestFinished, Time: usageNow.Add(-ago), Provider: "anthropic",
		CredentialID: id, Label: label, CredentialKind: kind, Model: "claude-sonnet-4-5", Status: 200, Class: "ok",
		Attempts: 1, LatencyMS: 3400, InputTokens: in, OutputTokens: out, Client: "default", ClientApp: "claude-code"}
}

// seededHistory: claude-max (a login) and work-key (an API key) today,
// a refusal, yesterday and last week's requests.
func seededHistory(t *testing.T) dbSource {
	t.Helper()
	db, err := history.Open(filepath.Join(t.TempDir(), history.FileName), history.Options{Clock: clock.NewFake(usageNow)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	refused := finishedAt(20*time.Minute, "c1", "claude-max", api.KindOAuth, 0, 0)
	refused.Status, refused.Class, refused.WaitedMS = 429, "rate_limit", 8000
	for _, e := range []api.Event{
		finishedAt(5*24*time.Hour, "c1", "claude-max", api.KindOAuth, 50_000, 5_000), // last week: days chart only
		finishedAt(20*time.Hour, "k1", "work-key", api.KindAPIKey, 1_000_000, 0),     // yesterday, inside 24h
		finishedAt(2*time.Hour, "c1", "claude-max", api.KindOAuth, 10_000, 2_000),    // 12:30
		finishedAt(90*time.Minute, "k1", "work-key", api.KindAPIKey, 3_000, 1_000),   // 13:00
		refused,
		finishedAt(10*time.Minute, "c1", "claude-max", api.KindOAuth, 1_200, 300), // 14:20, the running hour
	} {
		db.Emit(e)
	}
	if err := db.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dbSource{db}
}

func loadedUsage(t *testing.T) *Usage {
	t.Helper()
	src := seededHistory(t)
	d, err := FetchUsage(context.Background(), src, usageNow, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	u := &Usage{Loc: time.UTC}
	// The panel's order gives the colours: work-key first, then claude-max.
	u.Apply(api.Event{Type: api.EventSnapshot, Snapshot: &api.Status{Providers: []api.ProviderStatus{{Name: "anthropic",
		Credentials: []api.CredentialStatus{{ID: "k1", Label: "work-key"}, {ID: "c1", Label: "claude-max"}}}}}})
	u.Loaded(d)
	return u
}

func barsText(bars []Bar) string {
	var out []string
	for _, b := range bars {
		if b.Total == 0 {
			continue
		}
		var parts []string
		for _, p := range b.Parts {
			parts = append(parts, fmt.Sprintf("%d:%d", p.Series, p.Tokens))
		}
		out = append(out, b.Tip+" ["+strings.Join(parts, " ")+"]")
	}
	return strings.Join(out, "\n")
}

func TestUsageViewOfASeededHistory(t *testing.T) {
	u := loadedUsage(t)
	v := u.View(usageNow, SpanHours)

	if len(v.Bars) != ChartHours || !v.Bars[ChartHours-1].Now || v.Bars[ChartHours-1].Label != "now" {
		t.Fatalf("%d bars, last %+v", len(v.Bars), v.Bars[len(v.Bars)-1])
	}
	// Hourly, stacked bottom up in the panel's order (work-key = 0).
	want := `18:00 · 1M tokens [0:1000000]
12:00 · 12k tokens [1:12000]
13:00 · 4k tokens [0:4000]
14:00 · 1.5k tokens [1:1500]`
	if got := barsText(v.Bars); got != want {
		t.Errorf("bars\n got:\n%s\nwant:\n%s", got, want)
	}
	if v.Max != 1_000_000 || v.Peak != "peak 1M tokens in an hour" {
		t.Errorf("max %d peak %q", v.Max, v.Peak)
	}
	if got := fmt.Sprint(v.Legend); got != "[{0 work-key 1M} {1 claude-max 13.5k}]" {
		t.Errorf("legend %s", got)
	}
	// The axis names the running hour and every sixth one back.
	var axis []string
	for _, b := range v.Bars {
		if b.Label != "" {
			axis = append(axis, b.Label)
		}
	}
	if got := strings.Join(axis, " "); got != "20:00 02:00 08:00 now" {
		t.Errorf("axis %q", got)
	}

	// Today (since midnight): three requests of claude-max (one refused,
	// eight seconds waiting) and one of work-key at Sonnet's price:
	// 3k in at $3/M + 1k out at $15/M = $0.024.
	if v.Today != "Today: 4 requests · 17.5k tokens · 1 refused · 8s waiting · $0.02 on API keys" {
		t.Errorf("today %q", v.Today)
	}
	if got := fmt.Sprint(v.Credentials); got != "[{claude-max 13.5k 13.5k tokens · 3 requests · 1 refused · included 1 1} "+
		"{work-key 4k 4k tokens · 1 request · $0.02 0.2962962962962963 0}]" {
		t.Errorf("credentials %s", got)
	}
	if v.ClientsText != "Clients: default 17.5k" || v.AppsText != "Tools: claude-code 17.5k" {
		t.Errorf("clients %q apps %q", v.ClientsText, v.AppsText)
	}

	// Newest first, the refusal coloured as one that passes by itself.
	if len(v.Recent) != 6 {
		t.Fatalf("%d recent", len(v.Recent))
	}
	if r := v.Recent[0]; r.Time != "14:20:00" || r.Class != "ok" || r.Level != LevelGood ||
		r.Text != "claude-max · claude-sonnet-4-5 · 1.5k tokens · 3.4s · claude-code" {
		t.Errorf("recent[0] %+v", r)
	}
	if r := v.Recent[1]; r.Class != "rate limit" || r.Level != LevelInfo {
		t.Errorf("recent[1] %+v", r)
	}
	if v.Note != "" {
		t.Errorf("note %q", v.Note)
	}
}

func TestUsageViewByDay(t *testing.T) {
	u := loadedUsage(t)
	v := u.View(usageNow, SpanDays)
	want := `Sun 15 Nov · 55k tokens [1:55000]
Thu 19 Nov · 1M tokens [0:1000000]
Fri 20 Nov · 17.5k tokens [0:4000 1:13500]`
	if got := barsText(v.Bars); got != want {
		t.Errorf("bars\n got:\n%s\nwant:\n%s", got, want)
	}
	if len(v.Bars) != ChartDays || v.Bars[ChartDays-1].Label != "today" || v.Title != "Tokens per day · last 30 days" {
		t.Errorf("%d bars, last %q, title %q", len(v.Bars), v.Bars[ChartDays-1].Label, v.Title)
	}
}

// A finished request shows at once, before the history is read again,
// and marks the totals stale so the tray reads them.
func TestUsageFoldsAFinishedRequestLive(t *testing.T) {
	u := loadedUsage(t)
	ev := finishedAt(-time.Minute, "c1", "", api.KindOAuth, 400, 100) // 14:31
	ev.ClientApp = "codex"
	if !u.Apply(ev) || !u.Stale {
		t.Fatal("a finished request did not change the view or mark it stale")
	}
	v := u.View(usageNow.Add(time.Minute), SpanHours)
	if last := v.Bars[ChartHours-1]; last.Total != 2_000 || fmt.Sprint(last.Parts) != "[{1 2000}]" {
		t.Errorf("running hour %+v", last)
	}
	if !strings.HasPrefix(v.Today, "Today: 5 requests · 18k tokens") {
		t.Errorf("today %q", v.Today)
	}
	if r := v.Recent[0]; r.Time != "14:31:00" || !strings.HasPrefix(r.Text, "claude-max · ") {
		t.Errorf("recent[0] %+v", r)
	}
	if v.AppsText != "Tools: claude-code 17.5k, codex 500" {
		t.Errorf("apps %q", v.AppsText)
	}

	// An hour on, the chart moves: 14:00 is no longer the running bar.
	v = u.View(usageNow.Add(time.Hour), SpanHours)
	if v.Bars[ChartHours-1].Total != 0 || v.Bars[ChartHours-2].Total != 2_000 {
		t.Errorf("after an hour: last %d, before %d", v.Bars[ChartHours-1].Total, v.Bars[ChartHours-2].Total)
	}
}

func TestUsageNotes(t *testing.T) {
	var u Usage
	if v := u.View(usageNow, SpanHours); v.Note != "Reading the history…" {
		t.Errorf("before any read: %q", v.Note)
	}
	u.Loaded(UsageData{At: usageNow})
	if v := u.View(usageNow, SpanHours); !strings.HasPrefix(v.Note, "No requests yet.") {
		t.Errorf("empty history: %q", v.Note)
	}
	u.Failed(fmt.Errorf("%w: history is off ([history] enabled = false in config.toml)", api.ErrUnsupported))
	if v := u.View(usageNow, SpanHours); v.Note != "No history: history is off ([history] enabled = false in config.toml)." {
		t.Errorf("off: %q", v.Note)
	}
	u = Usage{}
	u.Loaded(UsageData{At: usageNow, Hours: api.UsageReport{Dropped: 3}})
	u.Failed(fmt.Errorf("connection refused"))
	if v := u.View(usageNow, SpanHours); v.Note != "Could not read the history (connection refused); showing what was read before. "+
		"3 requests not recorded: the history writer fell behind." {
		t.Errorf("failed: %q", v.Note)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 950: "950", 1000: "1k", 12_345: "12.3k", 999_999: "1M", 999_000: "999k",
		4_500_000: "4.5M", 123_456_789: "123M", 1_200_000_000: "1.2B"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
