package history

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func open(t testing.TB, o Options) *DB {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), FileName), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func sync_(t testing.TB, d *DB) {
	t.Helper()
	if err := d.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func count(t testing.TB, d *DB, where string) int {
	t.Helper()
	var n int
	if err := d.sql.QueryRow("SELECT COUNT(*) FROM requests WHERE " + where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func finished(at time.Time, model string) api.Event {
	return api.Event{Type: api.EventRequestFinished, Time: at, Provider: "anthropic", CredentialID: "c1",
		Model: model, Path: "/v1/messages", Status: 200, Class: "ok", Attempts: 1, LatencyMS: 900}
}

func TestConcurrentWritesAllLand(t *testing.T) {
	d := open(t, Options{Clock: clock.NewFake(t0)})
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			e := finished(t0, "claude-sonnet-4-5")
			e.OutputTokens = int64(i)
			d.Emit(e)
			// Other events pass by the history untouched.
			d.Emit(api.Event{Type: api.EventRotated})
		})
	}
	wg.Wait()
	sync_(t, d)
	if n := count(t, d, "1=1"); n != 100 {
		t.Fatalf("rows = %d, want 100", n)
	}
	var sum int64
	d.sql.QueryRow("SELECT SUM(output_tokens) FROM requests").Scan(&sum)
	if sum != 99*100/2 {
		t.Fatalf("sum of output tokens = %d, want %d (a row lost or doubled)", sum, 99*100/2)
	}
	if d.Dropped() != 0 {
		t.Fatalf("dropped = %d", d.Dropped())
	}
}

// seed writes rows with known totals: two API-key Sonnet requests, one
// subscription Opus request, one rate-limited request, one API-key request
// for a model without a price.
func seed(t testing.TB, d *DB) {
	t.Helper()
	rows := []api.Event{
		{Model: "claude-sonnet-4-5-20250929", CredentialID: "key1", Label: "work", CredentialKind: api.KindAPIKey, Class: "ok", Status: 200,
			InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 400_000, Client: "me", ClientApp: "claude-code"},
		{Model: "claude-sonnet-4-5-20250929", CredentialID: "key1", Label: "work", CredentialKind: api.KindAPIKey, Class: "ok", Status: 200,
			InputTokens: 500_000, OutputTokens: 50_000, Client: "me", ClientApp: "claude-code"},
		{Model: "claude-opus-4-5", CredentialID: "sub1", Label: "max", CredentialKind: api.KindOAuth, Class: "ok", Status: 200,
			InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40, Client: "me", ClientApp: "codex"},
		{Model: "claude-opus-4-5", CredentialID: "sub1", Label: "max", CredentialKind: api.KindOAuth, Class: "rate_limit", Status: 429, WaitedMS: 1500, Client: "ci", ClientApp: "other"},
		{Model: "mystery-1", CredentialID: "key2", CredentialKind: api.KindAPIKey, Class: "ok", Status: 200, InputTokens: 7, Client: "ci", ClientApp: "aider"},
	}
	for i, e := range rows {
		e.Type = api.EventRequestFinished
		e.Provider = "anthropic"
		e.Time = t0.Add(-time.Duration(i) * time.Minute)
		d.Emit(e)
	}
	sync_(t, d)
}

func TestUsageByModel(t *testing.T) {
	d := open(t, Options{Clock: clock.NewFake(t0)})
	seed(t, d)
	rep, err := d.Usage(context.Background(), "24h", api.ByModel)
	if err != nil {
		t.Fatal(err)
	}
	// Sonnet at $3 in, $15 out, $0.30 cache read, $3.75 cache write:
	// 1.5M in = 4.5, 150k out = 2.25, 2M read = 0.6, 400k write = 1.5.
	want := []api.UsageRow{
		{Key: "claude-opus-4-5", Requests: 2, InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40,
			Refusals: map[string]int64{"rate_limit": 1}, WaitedMS: 1500, Included: 2},
		{Key: "claude-sonnet-4-5-20250929", Requests: 2, InputTokens: 1_500_000, OutputTokens: 150_000, CacheReadTokens: 2_000_000,
			CacheWriteTokens: 400_000, CostUSD: 8.85},
		{Key: "mystery-1", Requests: 1, InputTokens: 7, Unpriced: 1},
	}
	if len(rep.Rows) != len(want) {
		t.Fatalf("rows = %+v", rep.Rows)
	}
	for i := range want {
		got := rep.Rows[i]
		if math.Abs(got.CostUSD-want[i].CostUSD) > 1e-9 {
			t.Errorf("%s cost = %v, want %v", got.Key, got.CostUSD, want[i].CostUSD)
		}
		got.CostUSD = want[i].CostUSD
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want[i])
		if !bytes.Equal(g, w) {
			t.Errorf("row %d:\n got %s\nwant %s", i, g, w)
		}
	}
	if rep.Total.Requests != 5 || rep.Total.Refusals["rate_limit"] != 1 || math.Abs(rep.Total.CostUSD-8.85) > 1e-9 {
		t.Errorf("total = %+v", rep.Total)
	}
}

func TestUsageGroupings(t *testing.T) {
	d := open(t, Options{Clock: clock.NewFake(t0)})
	seed(t, d)
	keys := func(by string) (out []string) {
		rep, err := d.UsageSince(context.Background(), t0.Add(-time.Hour), by)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Rows {
			out = append(out, r.Key+"/"+r.Label)
		}
		return out
	}
	for by, want := range map[string]string{
		api.ByCredential: "[key1/work key2/ sub1/max]",
		api.ByClient:     "[ci/ me/]",
		api.ByApp:        "[aider/ claude-code/ codex/ other/]",
		api.ByProvider:   "[anthropic/]",
		api.ByDay:        "[2026-11-20/]",
		api.ByHour:       "[2026-11-20 11:00/ 2026-11-20 12:00/]",
	} {
		if got := fmt.Sprint(keys(by)); got != want {
			t.Errorf("by %s: %s, want %s", by, got, want)
		}
	}
	if _, err := d.Usage(context.Background(), "24h", "week"); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("by week: %v, want a bad request", err)
	}
}

func TestParseSince(t *testing.T) {
	loc := time.FixedZone("X", 5*3600+30*60)
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, loc)
	for in, want := range map[string]time.Time{
		"":                     now.Add(-24 * time.Hour),
		"90m":                  now.Add(-90 * time.Minute),
		"7d":                   now.AddDate(0, 0, -7),
		"2026-11-01":           time.Date(2026, 11, 1, 0, 0, 0, 0, loc),
		"2026-11-01T10:00:00Z": time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC),
	} {
		got, err := ParseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-3d", "7w"} {
		if _, err := ParseSince(bad, now); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("ParseSince(%q) = %v, want a bad request", bad, err)
		}
	}
}

func TestRetentionDeletesOldRows(t *testing.T) {
	clk := clock.NewFake(t0)
	d := open(t, Options{Clock: clk, Days: 30})
	for _, age := range []time.Duration{0, 29 * 24 * time.Hour, 31 * 24 * time.Hour, 400 * 24 * time.Hour} {
		d.Emit(finished(t0.Add(-age), "m"))
	}
	sync_(t, d)
	n, err := d.Prune(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("pruned %d, %v; want 2", n, err)
	}
	if got := count(t, d, "1=1"); got != 2 {
		t.Fatalf("%d rows left, want 2", got)
	}
	// A day later the 29-day-old row is 30 days and a moment old. The
	// advance also fires the writer's hourly prune, which may delete the
	// row before this Prune does: what counts is that it is gone.
	clk.Advance(24*time.Hour + time.Millisecond)
	if _, err := d.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := count(t, d, "1=1"); got != 1 {
		t.Fatalf("%d rows left a day later, want 1", got)
	}
}

// The writer prunes at its hourly tick on the injected clock.
func TestRetentionRunsHourly(t *testing.T) {
	clk := clock.NewFake(t0)
	d := open(t, Options{Clock: clk, Days: 1})
	d.Emit(finished(t0.Add(-23*time.Hour), "m"))
	sync_(t, d)
	clk.Advance(2 * time.Hour) // the row is now 25 hours old; the tick fires
	// The tick and a Sync may reach the writer in either order: the prune
	// must come, not necessarily before the first Sync.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		sync_(t, d)
		got := count(t, d, "1=1")
		if got == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows left after the hourly prune, want 0", got)
		}
	}
}

func TestNewerSchemaIsRefusedAndLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	d, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Emit(finished(t0, "m"))
	d.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// What a future subpool would leave: a later version, back in the
	// default journal mode.
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA journal_mode=DELETE; PRAGMA user_version = %d", SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	before, _ := os.ReadFile(path)

	_, err = Open(path, Options{})
	var newer *ErrNewerSchema
	if !errors.As(err, &newer) || newer.Found != SchemaVersion+1 {
		t.Fatalf("Open = %v, want ErrNewerSchema", err)
	}
	if _, err := OpenReadOnly(path); !errors.As(err, &newer) {
		t.Fatalf("OpenReadOnly = %v, want ErrNewerSchema", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("the newer file was changed")
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("a WAL file was created beside the newer database")
	}
}

func TestFullQueueDropsAndCounts(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	path := filepath.Join(t.TempDir(), FileName)
	d, err := Open(path, Options{Queue: 4, Lookup: func(string) (string, string) {
		once.Do(func() { close(entered); <-release })
		return "", ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	d.Emit(finished(t0, "m"))
	go d.Sync(context.Background())
	<-entered // the writer is inside a commit and takes nothing from the queue
	for range 4 + 3 {
		d.Emit(finished(t0, "m"))
	}
	if got := d.Dropped(); got != 3 {
		t.Fatalf("dropped = %d, want 3", got)
	}
	close(release)
	sync_(t, d)
	if got := count(t, d, "1=1"); got != 5 {
		t.Fatalf("rows = %d, want 5", got)
	}
	d.Close()
	// The count outlives the process, for `subpool usage` with no proxy.
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	rep, err := ro.Usage(context.Background(), "7d", api.ByDay)
	if err != nil || rep.Dropped != 3 {
		t.Fatalf("read-only dropped = %d, %v; want 3", rep.Dropped, err)
	}
}

func TestCostOnlyForAPIKeys(t *testing.T) {
	kinds := map[string][2]string{"k": {"work", api.KindAPIKey}, "o": {"max", api.KindOAuth}}
	d := open(t, Options{Prices: map[string]Price{"my-model": {Input: 2, Output: 4}},
		Lookup: func(id string) (string, string) { return kinds[id][0], kinds[id][1] }})
	for _, e := range []api.Event{
		{CredentialID: "k", Model: "my-model", InputTokens: 1_000_000, OutputTokens: 500_000},
		{CredentialID: "o", Model: "my-model", InputTokens: 1_000_000},
		// A fallback is priced as the model that served it.
		{CredentialID: "k", Model: "claude-opus-4-5", ServedModel: "gpt-5.1", FallbackTo: "openai/gpt-5.1", OutputTokens: 1_000_000},
	} {
		e.Type = api.EventRequestFinished
		d.Emit(e)
	}
	sync_(t, d)
	page, err := d.List(context.Background(), api.HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	costs := map[int64]string{}
	for _, e := range page.Entries {
		if e.CostUSD == nil {
			costs[e.ID] = e.Label + ":included"
		} else {
			costs[e.ID] = fmt.Sprintf("%s:%.2f", e.Label, *e.CostUSD)
		}
	}
	if got := fmt.Sprint(costs); got != "map[1:work:4.00 2:max:included 3:work:10.00]" {
		t.Fatalf("costs = %s", got)
	}
}

func TestListPagesAndFilters(t *testing.T) {
	d := open(t, Options{})
	for i := range 7 {
		e := finished(t0.Add(time.Duration(i)*time.Second), "m")
		if i%2 == 1 {
			e.Class, e.Status = "rate_limit", 429
		}
		d.Emit(e)
	}
	sync_(t, d)
	ctx := context.Background()
	var ids []int64
	q := api.HistoryQuery{Limit: 3}
	for {
		p, err := d.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			ids = append(ids, e.ID)
		}
		if p.Next == 0 {
			break
		}
		q.Before = p.Next
	}
	if fmt.Sprint(ids) != "[7 6 5 4 3 2 1]" {
		t.Fatalf("pages gave %v", ids)
	}
	p, _ := d.List(ctx, api.HistoryQuery{Class: "rate_limit"})
	if len(p.Entries) != 3 || p.Entries[0].Status != 429 || !p.Entries[0].Time.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("rate_limit filter = %+v", p.Entries)
	}
}

func TestTeeStampsOnceAndPassesEverything(t *testing.T) {
	clk := clock.NewFake(t0)
	d := open(t, Options{Clock: clk})
	var got []api.Event
	rec := emitFunc(func(e api.Event) { got = append(got, e) })
	em := Tee(rec, d)
	em.Emit(api.Event{Type: api.EventRotated})
	em.Emit(api.Event{Type: api.EventRequestFinished, Model: "m"})
	sync_(t, d)
	if len(got) != 2 || !got[1].Time.Equal(t0) {
		t.Fatalf("next got %+v", got)
	}
	p, _ := d.List(context.Background(), api.HistoryQuery{})
	if len(p.Entries) != 1 || !p.Entries[0].Time.Equal(t0) {
		t.Fatalf("history has %+v", p.Entries)
	}
	if Tee(rec, nil) == nil {
		t.Fatal("Tee with no history must still emit")
	}
}

type emitFunc func(api.Event)

func (f emitFunc) Emit(e api.Event) { f(e) }
