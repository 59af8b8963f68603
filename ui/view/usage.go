package view

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// UsageSource is the part of the admin client the Usage view reads.
type UsageSource interface {
	Usage(ctx context.Context, since, by string) (api.UsageReport, error)
	History(ctx context.Context, q api.HistoryQuery) (api.HistoryPage, error)
}

// Chart spans: 24 hourly bars, or 30 daily ones.
const (
	ChartHours = 24
	ChartDays  = 30
	// RecentRows is how many finished requests the view lists.
	RecentRows = 30
)

// Report keys, as internal/history writes them: local hours and days.
const (
	hourKey = "2006-01-02 15:00"
	dayKey  = "2006-01-02"
)

// UsageData is one read of the history: what the Usage view draws until
// the next, with live events folded in meanwhile.
type UsageData struct {
	At          time.Time       // when it was read
	Hours       api.UsageReport // by hour,credential since the first hourly bar
	Days        api.UsageReport // by day,credential since the first daily bar
	Credentials api.UsageReport // today, by credential
	Clients     api.UsageReport // today, by client key
	Apps        api.UsageReport // today, by client app (claude-code, codex…)
	Recent      []api.HistoryEntry
}

// chartStart is the first hourly bar's hour and the first daily bar's
// midnight, in loc.
func chartStart(now time.Time, loc *time.Location) (hour, day time.Time) {
	n := now.In(loc)
	hour = time.Date(n.Year(), n.Month(), n.Day(), n.Hour(), 0, 0, 0, loc).Add(-(ChartHours - 1) * time.Hour)
	day = midnight(n).AddDate(0, 0, -(ChartDays - 1))
	return hour, day
}

func midnight(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
}

// FetchUsage reads what the Usage view shows at now. Times go out as RFC
// 3339 in loc, so the history groups hours and days in the tray's zone.
func FetchUsage(ctx context.Context, src UsageSource, now time.Time, loc *time.Location) (UsageData, error) {
	hour, day := chartStart(now, loc)
	today := midnight(now.In(loc)).Format(time.RFC3339)
	d := UsageData{At: now}
	for _, q := range []struct {
		dst   *api.UsageReport
		since string
		by    string
	}{
		{&d.Hours, hour.Format(time.RFC3339), api.ByHour + "," + api.ByCredential},
		{&d.Days, day.Format(time.RFC3339), api.ByDay + "," + api.ByCredential},
		{&d.Credentials, today, api.ByCredential},
		{&d.Clients, today, api.ByClient},
		{&d.Apps, today, api.ByApp},
	} {
		rep, err := src.Usage(ctx, q.since, q.by)
		if err != nil {
			return UsageData{}, err
		}
		*q.dst = rep
	}
	page, err := src.History(ctx, api.HistoryQuery{Limit: RecentRows})
	if err != nil {
		return UsageData{}, err
	}
	d.Recent = page.Entries
	return d, nil
}

// Usage is the Usage view's state: the last read of the history plus the
// requests finished since. Not safe for concurrent use; the tray guards it.
type Usage struct {
	// Loc is the zone hours and days are cut in; nil means time.Local.
	Loc *time.Location

	data   UsageData
	loaded bool
	off    string // why there is no history ("" while there is)
	err    string // the last read's failure, while the data is older
	// Stale is set by every finished request and cleared by Loaded: the
	// totals folded in live lack what only the history knows (cost).
	Stale bool

	labels map[string]string // credential id → label
	order  []string          // credential ids, in the order first seen
}

func (u *Usage) loc() *time.Location {
	if u.Loc == nil {
		return time.Local
	}
	return u.Loc
}

// Loaded replaces the data with a fresh read.
func (u *Usage) Loaded(d UsageData) {
	u.data, u.loaded, u.off, u.err, u.Stale = d, true, "", "", false
	for _, rep := range []api.UsageReport{d.Hours, d.Days, d.Credentials} {
		for _, r := range rep.Rows {
			id := r.Credential
			if rep.By == api.ByCredential {
				id = r.Key
			}
			u.learn(id, r.Label)
		}
	}
}

// Failed records a read that did not work; the last data stays on screen.
// History being off (api.ErrUnsupported) is said as such.
func (u *Usage) Failed(err error) {
	if errors.Is(err, api.ErrUnsupported) {
		u.off = strings.TrimPrefix(err.Error(), api.ErrUnsupported.Error()+": ")
		return
	}
	u.err = err.Error()
}

// learn keeps a credential's label and its place in the colour order.
func (u *Usage) learn(id, label string) {
	if id == "" {
		return
	}
	if u.labels == nil {
		u.labels = map[string]string{}
	}
	if _, ok := u.labels[id]; !ok {
		u.order = append(u.order, id)
		u.labels[id] = ""
	}
	if label != "" {
		u.labels[id] = label
	}
}

// Apply folds an event in: a snapshot or a new credential teaches labels
// (and gives each credential its colour, in the panel's order); a finished
// request counts at once and marks the totals stale. It reports whether
// the view changed.
func (u *Usage) Apply(ev api.Event) bool {
	switch ev.Type {
	case api.EventSnapshot:
		if ev.Snapshot == nil {
			return false
		}
		for _, p := range ev.Snapshot.Providers {
			for _, c := range p.Credentials {
				u.learn(c.ID, c.Label)
			}
		}
		return true
	case api.EventCredentialAdded, api.EventCredentialUpdated:
		u.learn(ev.CredentialID, ev.Label)
		return ev.Label != ""
	case api.EventRequestFinished:
		u.learn(ev.CredentialID, ev.Label)
		u.fold(ev)
		u.Stale = true
		return true
	}
	return false
}

// fold adds one finished request to every total it belongs to, as the
// history will once it is written.
func (u *Usage) fold(ev api.Event) {
	t := ev.Time.In(u.loc())
	r := api.UsageRow{Requests: 1, InputTokens: ev.InputTokens, OutputTokens: ev.OutputTokens,
		CacheReadTokens: ev.CacheReadTokens, CacheWriteTokens: ev.CacheWriteTokens, WaitedMS: ev.WaitedMS}
	if ev.Class != "" && ev.Class != "ok" {
		r.Refusals = map[string]int64{ev.Class: 1}
	}
	if ev.CredentialKind == api.KindOAuth {
		r.Included = 1
	}
	// The chart picks its bars by key when drawn, so any hour or day may
	// be added; "today" is the day of the last read until the next one.
	d := &u.data
	addRow(&d.Hours, t.Format(hourKey), ev.CredentialID, r)
	addRow(&d.Days, t.Format(dayKey), ev.CredentialID, r)
	if !t.Before(midnight(d.At.In(u.loc()))) {
		addRow(&d.Credentials, ev.CredentialID, "", r)
		addRow(&d.Clients, ev.Client, "", r)
		addRow(&d.Apps, ev.ClientApp, "", r)
	}
	e := api.HistoryEntry{Time: ev.Time, DurationMS: ev.LatencyMS, TTFBMS: ev.TTFBMS, Provider: ev.Provider,
		CredentialID: ev.CredentialID, Label: ev.Label, CredentialKind: ev.CredentialKind, Client: ev.Client,
		ClientApp: ev.ClientApp, Path: ev.Path, Model: ev.Model, ServedModel: ev.ServedModel, FallbackTo: ev.FallbackTo,
		Status: ev.Status, Class: ev.Class, Attempts: ev.Attempts, WaitedMS: ev.WaitedMS,
		InputTokens: ev.InputTokens, OutputTokens: ev.OutputTokens, CacheReadTokens: ev.CacheReadTokens, CacheWriteTokens: ev.CacheWriteTokens}
	d.Recent = append([]api.HistoryEntry{e}, d.Recent...)
	if len(d.Recent) > RecentRows {
		d.Recent = d.Recent[:RecentRows]
	}
}

// addRow adds r to the row keyed (key, cred), creating it in key order.
func addRow(rep *api.UsageReport, key, cred string, r api.UsageRow) {
	rep.Total.Add(r)
	for i := range rep.Rows {
		if rep.Rows[i].Key == key && rep.Rows[i].Credential == cred {
			rep.Rows[i].Add(r)
			return
		}
	}
	n := api.UsageRow{Key: key, Credential: cred}
	n.Add(r)
	i := 0
	for i < len(rep.Rows) && (rep.Rows[i].Key < key || rep.Rows[i].Key == key && rep.Rows[i].Credential < cred) {
		i++
	}
	rep.Rows = append(rep.Rows[:i], append([]api.UsageRow{n}, rep.Rows[i:]...)...)
}

// Tokens is every token a row counts: input, output and both cache kinds.
func Tokens(r api.UsageRow) int64 {
	return r.InputTokens + r.OutputTokens + r.CacheReadTokens + r.CacheWriteTokens
}
