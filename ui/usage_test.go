package ui

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/internal/history"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/ui/view"
)

// historySource reads a real history database as the admin client reads
// the proxy's, and counts the reads.
type historySource struct {
	db    *history.DB
	reads atomic.Int32
}

func (s *historySource) Usage(ctx context.Context, since, by string) (api.UsageReport, error) {
	return s.db.Usage(ctx, since, by)
}

func (s *historySource) History(ctx context.Context, q api.HistoryQuery) (api.HistoryPage, error) {
	s.reads.Add(1)
	return s.db.List(ctx, q)
}

func done(ago time.Duration, id, label, kind string, tokens int64) api.Event {
	return api.Event{Type: api.EventRequestFinished, Time: t0.Add(-ago), Provider: "anthropic", CredentialID: id,
		Label: label, CredentialKind: kind, Model: "claude-sonnet-4-5", Status: 200, Class: "ok", Attempts: 1,
		LatencyMS: 2100, InputTokens: tokens / 2, OutputTokens: tokens / 2, Client: "default", ClientApp: "claude-code"}
}

// seedHistory: claude-max busy this hour and three hours ago, claude-pro
// two hours ago, one refusal.
func seedHistory(t *testing.T) *historySource {
	t.Helper()
	db, err := history.Open(filepath.Join(t.TempDir(), history.FileName), history.Options{Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	limited := done(30*time.Minute, "c2", "claude-pro", api.KindOAuth, 0)
	limited.Status, limited.Class = 429, "rate_limit"
	for _, e := range []api.Event{
		done(3*time.Hour, "c1", "claude-max", api.KindOAuth, 40_000),
		done(2*time.Hour, "c2", "claude-pro", api.KindOAuth, 20_000),
		limited,
		done(time.Minute, "c1", "claude-max", api.KindOAuth, 10_000),
	} {
		db.Emit(e)
	}
	if err := db.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &historySource{db: db}
}

func newUsageHarness(t *testing.T) (*harness, *historySource) {
	src := seedHistory(t)
	h := newHarness(t, func(o *Options) { o.Usage = src })
	h.u.usage.model.Loc = time.UTC
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	return h, src
}

// openUsage selects the Usage tab and reads the history as the loop would.
func (h *harness) openUsage() {
	h.t.Helper()
	uu := h.u.usage
	uu.tabs.SelectIndex(1)
	<-uu.opened // what the loop would take
	uu.read(context.Background())
	uu.draw()
}

func rectsOfBar(c *chart, i int) []*canvas.Rectangle {
	r := test.WidgetRenderer(c).(*chartRenderer)
	return r.rects[i]
}

func TestUsageTabOnASeededHistory(t *testing.T) {
	h, _ := newUsageHarness(t)
	h.openUsage()
	w := h.u.usage.w

	if w.title.Text != "Tokens per hour · last 24 hours" || w.chart.scale != [2]string{"40k", "20k"} {
		t.Errorf("title %q scale %q", w.title.Text, w.chart.scale)
	}
	// t0 is 12:04: the last bar is 12:00, claude-max (colour 0) alone.
	bars := w.chart.bars
	if len(bars) != 24 || !bars[23].Now || bars[23].Total != 10_000 {
		t.Fatalf("%d bars, last %+v", len(bars), bars[23])
	}
	// 09:00 is the tallest bar: its rectangle fills the chart's height,
	// and 12:00's is a quarter of it.
	full := rectsOfBar(w.chart, 20)
	now := rectsOfBar(w.chart, 23)
	if len(full) != 1 || len(now) != 1 || full[0].FillColor != seriesColor(0) {
		t.Fatalf("09:00 has %d rectangles, 12:00 has %d", len(full), len(now))
	}
	if got := now[0].Size().Height / full[0].Size().Height; got < 0.24 || got > 0.26 {
		t.Errorf("12:00 is %.2f of 09:00's height, want 0.25", got)
	}
	if c2 := rectsOfBar(w.chart, 21); len(c2) != 1 || c2[0].FillColor != seriesColor(1) {
		t.Errorf("10:00 should be claude-pro's colour alone")
	}

	if w.today.Text != "Today: 4 requests · 70k tokens · 1 refused · all included in subscriptions" {
		t.Errorf("today %q", w.today.Text)
	}
	if n := len(w.legend.Objects); n != 2 {
		t.Errorf("legend has %d items", n)
	}
	if n := len(w.recent.Objects); n != 4 {
		t.Fatalf("%d recent rows", n)
	}
	first := findAll[*badge](w.recent.Objects[1])
	if len(first) != 1 || first[0].text != "rate limit" || first[0].level != view.LevelInfo {
		t.Errorf("the refusal's badge %+v", first)
	}

	// 30 days: one bar for today holding all of it.
	test.Tap(findRadio(t, w.span, spanDaysText))
	if w.title.Text != "Tokens per day · last 30 days" || len(w.chart.bars) != 30 || w.chart.bars[29].Total != 70_000 {
		t.Errorf("days: title %q, %d bars", w.title.Text, len(w.chart.bars))
	}
	// The tab alone: the panel around it is other tests' business.
	h.u.win.Resize(fyne.NewSize(560, 900))
	test.AssertObjectRendersToMarkup(t, "usage_days.xml", w.content)
}

// A finished request shows on the chart and in the list at once, then
// the loop reads the history again once things settle.
func TestUsageTabUpdatesLive(t *testing.T) {
	h, src := newUsageHarness(t)
	h.openUsage()
	reads := src.reads.Load()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.u.usage.shown.Store(true)
	h.u.goSafe("usage", func() { h.u.usage.loop(ctx) })
	waitArmed(t, h.clk) // the loop waits for something to do

	ev := done(0, "c2", "", api.KindOAuth, 5_000)
	ev.Class, ev.Status = "capacity", 529
	h.u.handle(ev)
	h.runUI() // drawn at once, before any read
	w := h.u.usage.w
	if w.chart.bars[23].Total != 15_000 || len(w.recent.Objects) != 5 {
		t.Fatalf("after the event: last bar %d, %d recent rows", w.chart.bars[23].Total, len(w.recent.Objects))
	}
	if b := findAll[*badge](w.recent.Objects[0]); b[0].text != "capacity" {
		t.Errorf("newest badge %q", b[0].text)
	}
	if got := labelTexts(w.recent.Objects[0]); !strings.Contains(got, "claude-pro · claude-sonnet-4-5 · 5k tokens") {
		t.Errorf("the live row says %q", got)
	}
	if src.reads.Load() != reads {
		t.Fatal("read the history before it settled")
	}
	waitArmed(t, h.clk)
	h.clk.Advance(usageSettle)
	h.runUI()
	if src.reads.Load() != reads+1 {
		t.Errorf("reads %d, want %d", src.reads.Load(), reads+1)
	}
	if h.u.usage.model.Stale {
		t.Error("still stale after the read")
	}
}

func TestNoUsageSourceNoTabs(t *testing.T) {
	h := newHarness(t, nil)
	if h.u.usage != nil || len(findAll[*container.AppTabs](h.u.win.Content())) != 0 {
		t.Error("tabs without a usage source")
	}
}

func findRadio(t *testing.T, g *widget.RadioGroup, option string) fyne.Tappable {
	t.Helper()
	for _, it := range findAll[fyne.Tappable](g) {
		for _, txt := range findAll[*widget.RichText](it.(fyne.CanvasObject)) {
			if txt.String() == option {
				return it
			}
		}
		for _, txt := range findAll[*canvas.Text](it.(fyne.CanvasObject)) {
			if txt.Text == option {
				return it
			}
		}
	}
	t.Fatalf("no option %q", option)
	return nil
}

func labelTexts(o fyne.CanvasObject) string {
	var out []string
	for _, l := range findAll[*widget.Label](o) {
		out = append(out, l.Text)
	}
	for _, l := range findAll[*lineLabel](o) {
		out = append(out, l.Text)
	}
	return strings.Join(out, " | ")
}

// Options.Tab opens the panel on the Usage tab, and the loop reads the
// history at once rather than after a minute.
func TestStartOnTheUsageTab(t *testing.T) {
	src := seedHistory(t)
	h := newHarness(t, func(o *Options) { o.Usage, o.Tab = src, "usage" })
	uu := h.u.usage
	if uu.tabs.SelectedIndex() != 1 || !uu.shown.Load() {
		t.Fatalf("tab %d shown %v", uu.tabs.SelectedIndex(), uu.shown.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	uu.model.Loc = time.UTC
	h.u.goSafe("usage", func() { uu.loop(ctx) })
	h.runUI()
	if src.reads.Load() != 1 || len(uu.w.recent.Objects) != 4 {
		t.Errorf("reads %d, recent rows %d", src.reads.Load(), len(uu.w.recent.Objects))
	}
}
