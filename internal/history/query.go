package history

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// DefaultSince is the window `subpool usage` reports without --since.
const DefaultSince = "24h"

// ParseSince reads "24h", "90m", "7d", a local date "2026-11-01" or an
// RFC 3339 time, relative to now. Errors wrap api.ErrBadRequest.
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = DefaultSince
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 {
			return now.AddDate(0, 0, -days), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, now.Location()); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%w: since %q: use a duration (24h, 7d) or a date (2026-11-01)", api.ErrBadRequest, s)
}

// groupings: what each "by" groups on. Time groupings read 15-minute
// buckets from SQL and fold them into local hours or days here, so that a
// zone with a half- or quarter-hour offset still gets its own midnight.
var groupings = map[string]string{
	api.ByDay:        "ts / 900000",
	api.ByHour:       "ts / 900000",
	api.ByCredential: "credential_id",
	api.ByModel:      "CASE served_model WHEN '' THEN model ELSE served_model END",
	api.ByClient:     "client",
	api.ByApp:        "client_app",
	api.ByProvider:   "provider",
}

// ByNames lists the groupings Usage accepts.
func ByNames() []string {
	return []string{api.ByDay, api.ByHour, api.ByCredential, api.ByModel, api.ByClient, api.ByApp, api.ByProvider}
}

// Usage totals the requests since (ParseSince) grouped by by (api.ByDay
// and the rest; default day). Errors in since or by wrap api.ErrBadRequest.
func (d *DB) Usage(ctx context.Context, since, by string) (api.UsageReport, error) {
	now := time.Now()
	if d.o.Clock != nil {
		now = d.o.Clock.Now()
	}
	from, err := ParseSince(since, now.Local())
	if err != nil {
		return api.UsageReport{}, err
	}
	if by == "" {
		by = api.ByDay
	}
	return d.UsageSince(ctx, from, by)
}

// UsageSince is Usage from a time.
func (d *DB) UsageSince(ctx context.Context, from time.Time, by string) (api.UsageReport, error) {
	// "hour,credential" splits each group by credential: the tray's
	// stacked chart reads one query instead of one per credential.
	primary, split, splitting := strings.Cut(by, ",")
	expr, ok := groupings[primary]
	if !ok || splitting && (split != api.ByCredential || primary == api.ByCredential) {
		return api.UsageReport{}, fmt.Errorf("%w: by %q: use one of %s (a time or other grouping may add \",credential\")",
			api.ErrBadRequest, by, strings.Join(ByNames(), ", "))
	}
	splitExpr := "''"
	if splitting {
		splitExpr = "credential_id"
	}
	q := `SELECT ` + expr + ` AS k, ` + splitExpr + ` AS k2, class, MAX(label), COUNT(*),
		SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens), SUM(cache_write_tokens),
		SUM(waited_ms), TOTAL(cost_usd),
		SUM(CASE WHEN kind = 'oauth' THEN 1 ELSE 0 END),
		SUM(CASE WHEN kind = 'api_key' AND cost_usd IS NULL THEN 1 ELSE 0 END)
		FROM requests WHERE ts >= ? GROUP BY k, k2, class`
	rows, err := d.sql.QueryContext(ctx, q, from.UnixMilli())
	if err != nil {
		return api.UsageReport{}, fmt.Errorf("history: %v", err)
	}
	defer rows.Close()
	groups := map[string]*api.UsageRow{}
	timeKeyed := primary == api.ByDay || primary == api.ByHour
	total := api.UsageRow{Key: "total"}
	for rows.Next() {
		var (
			key, sub, class, label string
			bucket                 int64
			r                      api.UsageRow
			kv                     any = &key
		)
		if timeKeyed {
			kv = &bucket
		}
		if err := rows.Scan(kv, &sub, &class, &label, &r.Requests, &r.InputTokens, &r.OutputTokens,
			&r.CacheReadTokens, &r.CacheWriteTokens, &r.WaitedMS, &r.CostUSD, &r.Included, &r.Unpriced); err != nil {
			return api.UsageReport{}, fmt.Errorf("history: %v", err)
		}
		if timeKeyed {
			t := time.UnixMilli(bucket * 900000).In(from.Location())
			if primary == api.ByDay {
				key = t.Format("2006-01-02")
			} else {
				key = t.Format("2006-01-02 15:00")
			}
		}
		g := groups[key+"\x00"+sub]
		if g == nil {
			g = &api.UsageRow{Key: key, Credential: sub}
			groups[key+"\x00"+sub] = g
		}
		if (primary == api.ByCredential || splitting) && label != "" {
			g.Label = label
		}
		r.Refusals = nil
		if class != "" && class != "ok" {
			r.Refusals = map[string]int64{class: r.Requests}
		}
		g.Add(r)
		total.Add(r)
	}
	if err := rows.Err(); err != nil {
		return api.UsageReport{}, fmt.Errorf("history: %v", err)
	}
	rep := api.UsageReport{Since: from, By: by, Rows: make([]api.UsageRow, 0, len(groups)), Total: total, Dropped: d.Dropped()}
	for _, g := range groups {
		rep.Rows = append(rep.Rows, *g)
	}
	sort.Slice(rep.Rows, func(i, j int) bool {
		a, b := rep.Rows[i], rep.Rows[j]
		return a.Key < b.Key || a.Key == b.Key && a.Credential < b.Credential
	})
	return rep, nil
}

// List returns recent requests, newest first.
func (d *DB) List(ctx context.Context, q api.HistoryQuery) (api.HistoryPage, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	q.Limit = min(q.Limit, 1000)
	where, args := []string{"1=1"}, []any{}
	if q.Before > 0 {
		where, args = append(where, "id < ?"), append(args, q.Before)
	}
	if q.Class != "" {
		where, args = append(where, "class = ?"), append(args, q.Class)
	}
	args = append(args, q.Limit+1)
	rows, err := d.sql.QueryContext(ctx, `SELECT id, ts, duration_ms, ttfb_ms, provider, credential_id, label, kind,
		client, client_app, path, model, served_model, fallback_to, status, class, attempts, waited_ms,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd
		FROM requests WHERE `+strings.Join(where, " AND ")+` ORDER BY id DESC LIMIT ?`, args...)
	if err != nil {
		return api.HistoryPage{}, fmt.Errorf("history: %v", err)
	}
	defer rows.Close()
	page := api.HistoryPage{Entries: []api.HistoryEntry{}}
	for rows.Next() {
		var e api.HistoryEntry
		var ts int64
		var cost sql.NullFloat64
		if err := rows.Scan(&e.ID, &ts, &e.DurationMS, &e.TTFBMS, &e.Provider, &e.CredentialID, &e.Label, &e.CredentialKind,
			&e.Client, &e.ClientApp, &e.Path, &e.Model, &e.ServedModel, &e.FallbackTo, &e.Status, &e.Class, &e.Attempts, &e.WaitedMS,
			&e.InputTokens, &e.OutputTokens, &e.CacheReadTokens, &e.CacheWriteTokens, &cost); err != nil {
			return api.HistoryPage{}, fmt.Errorf("history: %v", err)
		}
		e.Time = time.UnixMilli(ts).UTC()
		if cost.Valid {
			c := cost.Float64
			e.CostUSD = &c
		}
		page.Entries = append(page.Entries, e)
	}
	if err := rows.Err(); err != nil {
		return api.HistoryPage{}, fmt.Errorf("history: %v", err)
	}
	if len(page.Entries) > q.Limit {
		page.Entries = page.Entries[:q.Limit]
		page.Next = page.Entries[q.Limit-1].ID
	}
	return page, nil
}
