package view

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Span picks the chart: the last 24 hours by hour, or 30 days by day.
type Span int

const (
	SpanHours Span = iota
	SpanDays
)

// UsageView is what the Usage tab draws at one instant.
type UsageView struct {
	Title string // "Tokens per hour · last 24 hours"
	// Bars are oldest first; each stacks its credentials bottom up in
	// Legend order. Max is the tallest bar's total, for scaling.
	Bars []Bar
	Max  int64
	Peak string // "peak 1.2M tokens in an hour"
	// Scale labels the chart's two gridlines: the peak and half of it.
	Scale  [2]string
	Legend []LegendItem
	// Today is the one line of today's totals.
	Today       string
	Credentials []UsageLine
	Clients     []UsageLine // by client key
	Apps        []UsageLine // by client app
	// ClientsText and AppsText say the same short, on one line each:
	// "Clients: default 784k, ci 12k".
	ClientsText string
	AppsText    string
	Recent      []RecentLine
	// Note says why the view is empty or old: history off, no link, a
	// failed read, nothing recorded yet.
	Note string
}

// Bar is one hour or day.
type Bar struct {
	Label string // axis text, set on every few bars only
	Tip   string // "14:00 · 12.3k tokens"
	Total int64
	Parts []BarPart // bottom up, only credentials with tokens
	Now   bool      // the hour or day still running
}

// BarPart is one credential's share of a bar.
type BarPart struct {
	Series int // colour index: the credential's place in Legend
	Tokens int64
}

// LegendItem names a colour.
type LegendItem struct {
	Series int
	Label  string
	Tokens string // over the chart's span
}

// UsageLine is one total of today's.
type UsageLine struct {
	Name   string
	Tokens string  // "1.2M"
	Detail string  // "1.2M tokens · 40 requests · 2 refused · $0.31"
	Share  float64 // of the list's largest, 0..1
	Series int     // colour index for a credential; -1 for others
}

// RecentLine is one finished request.
type RecentLine struct {
	Time  string // "14:03:07"
	Class string // "ok", "rate limit"…
	Level Level  // the class's colour; Class says the same in words
	Text  string // "claude-max · claude-sonnet-4-5 · 1.2k tokens · 3.4s"
}

// View computes the Usage tab at now. It does not change the state.
func (u *Usage) View(now time.Time, span Span) UsageView {
	var v UsageView
	loc := u.loc()
	series := u.seriesOf()
	if span == SpanDays {
		v.Title = "Tokens per day · last 30 days"
		v.Bars, v.Legend = u.bars(u.data.Days, series, now, ChartDays)
	} else {
		v.Title = "Tokens per hour · last 24 hours"
		v.Bars, v.Legend = u.bars(u.data.Hours, series, now, ChartHours)
	}
	for _, b := range v.Bars {
		v.Max = max(v.Max, b.Total)
	}
	if v.Max > 0 {
		per := "an hour"
		if span == SpanDays {
			per = "a day"
		}
		v.Peak = fmt.Sprintf("peak %s tokens in %s", Count(v.Max), per)
		v.Scale = [2]string{Count(v.Max), Count(v.Max / 2)}
	}

	today := u.data.Credentials.Total
	spent := cost(today)
	if spent == "included" {
		spent = "all included in subscriptions"
	} else if spent != "" {
		spent += " on API keys"
	}
	v.Today = "Today: " + joinNonEmpty(" · ", plural(today.Requests, "request"), Count(Tokens(today))+" tokens",
		refused(today), waited(today), spent)
	v.Credentials = lines(u.data.Credentials.Rows, func(r api.UsageRow) (string, int) {
		if l := u.labels[r.Key]; l != "" {
			return l, series[r.Key]
		}
		// A request no credential served: subpool refused it itself
		// (every one cooling, or the client's own mistake).
		return orNone(r.Key, "refused by subpool"), seriesOr(series, r.Key)
	})
	v.Clients = lines(u.data.Clients.Rows, func(r api.UsageRow) (string, int) { return orNone(r.Key, "no client key"), -1 })
	v.Apps = lines(u.data.Apps.Rows, func(r api.UsageRow) (string, int) { return orNone(r.Key, "unknown"), -1 })
	v.ClientsText, v.AppsText = short("Clients", v.Clients), short("Tools", v.Apps)

	for _, e := range u.data.Recent {
		v.Recent = append(v.Recent, u.recentLine(e, loc))
	}

	switch {
	case u.off != "":
		v.Note = "No history: " + u.off + "."
	case u.err != "":
		v.Note = "Could not read the history (" + u.err + "); showing what was read before."
	case !u.loaded && len(u.data.Recent) == 0:
		v.Note = "Reading the history…"
	case len(u.data.Recent) == 0 && today.Requests == 0 && v.Max == 0:
		v.Note = "No requests yet. Point a tool at the proxy (Copy setup in the tray menu) and its usage shows here."
	}
	if d := u.data.Hours.Dropped; d > 0 {
		v.Note = joinNonEmpty(" ", v.Note, fmt.Sprintf("%s not recorded: the history writer fell behind.", plural(d, "request")))
	}
	return v
}

// seriesOf gives every known credential a colour index in the order the
// panel lists them, so a credential keeps its colour as totals change.
func (u *Usage) seriesOf() map[string]int {
	s := make(map[string]int, len(u.order))
	for i, id := range u.order {
		s[id] = i
	}
	return s
}

func seriesOr(s map[string]int, id string) int {
	if i, ok := s[id]; ok {
		return i
	}
	return -1
}

// bars lays rep over n slots ending with the one holding now.
func (u *Usage) bars(rep api.UsageReport, series map[string]int, now time.Time, n int) ([]Bar, []LegendItem) {
	loc := u.loc()
	hour, day := chartStart(now, loc)
	daily := n == ChartDays
	slots := make([]Bar, n)
	index := make(map[string]int, n)
	parts := make([]map[int]int64, n)
	for i := range slots {
		t := hour.Add(time.Duration(i) * time.Hour)
		key, tip, every := t.Format(hourKey), t.Format("15:00"), 6
		if daily {
			t = day.AddDate(0, 0, i)
			key, tip, every = t.Format(dayKey), t.Format("Mon 2 Jan"), 7
		}
		index[key] = i
		slots[i].Tip = tip
		// Label the last bar and every few back from it, so "now" always
		// has a name.
		if (n-1-i)%every == 0 {
			slots[i].Label = t.Format("15:00")
			if daily {
				slots[i].Label = t.Format("2 Jan")
			}
		}
		parts[i] = map[int]int64{}
	}
	slots[n-1].Now = true
	if daily {
		slots[n-1].Label = "today"
	} else {
		slots[n-1].Label = "now"
	}

	spanTotal := map[int]int64{}
	for _, r := range rep.Rows {
		i, ok := index[r.Key]
		if !ok {
			continue
		}
		s := seriesOr(series, r.Credential)
		tok := Tokens(r)
		parts[i][s] += tok
		slots[i].Total += tok
		spanTotal[s] += tok
	}
	for i := range slots {
		for s, tok := range parts[i] {
			if tok > 0 {
				slots[i].Parts = append(slots[i].Parts, BarPart{Series: s, Tokens: tok})
			}
		}
		// Bottom up in legend order, the unknown (-1) on top.
		sort.Slice(slots[i].Parts, func(a, b int) bool {
			pa, pb := slots[i].Parts[a].Series, slots[i].Parts[b].Series
			if pa < 0 || pb < 0 {
				return pb < 0 && pa >= 0
			}
			return pa < pb
		})
		slots[i].Tip += " · " + Count(slots[i].Total) + " tokens"
	}

	var legend []LegendItem
	for i, id := range u.order {
		if spanTotal[i] > 0 {
			legend = append(legend, LegendItem{Series: i, Label: orNone(u.labels[id], id), Tokens: Count(spanTotal[i])})
		}
	}
	if spanTotal[-1] > 0 {
		legend = append(legend, LegendItem{Series: -1, Label: "other", Tokens: Count(spanTotal[-1])})
	}
	return slots, legend
}

// lines turns today's rows into lines, largest first.
func lines(rows []api.UsageRow, name func(api.UsageRow) (string, int)) []UsageLine {
	rows = append([]api.UsageRow(nil), rows...)
	sort.SliceStable(rows, func(i, j int) bool {
		ti, tj := Tokens(rows[i]), Tokens(rows[j])
		if ti != tj {
			return ti > tj
		}
		return rows[i].Requests > rows[j].Requests
	})
	var top int64
	if len(rows) > 0 {
		top = Tokens(rows[0])
	}
	out := make([]UsageLine, 0, len(rows))
	for _, r := range rows {
		n, s := name(r)
		l := UsageLine{Name: n, Series: s, Tokens: Count(Tokens(r)),
			Detail: joinNonEmpty(" · ", Count(Tokens(r))+" tokens", plural(r.Requests, "request"), refused(r), cost(r))}
		if top > 0 {
			l.Share = float64(Tokens(r)) / float64(top)
		}
		out = append(out, l)
	}
	return out
}

func (u *Usage) recentLine(e api.HistoryEntry, loc *time.Location) RecentLine {
	label := e.Label
	if label == "" {
		label = u.labels[e.CredentialID]
	}
	model := e.Model
	if e.ServedModel != "" && e.ServedModel != e.Model {
		model += " → " + e.ServedModel
	}
	if e.FallbackTo != "" {
		model += " (fallback " + e.FallbackTo + ")"
	}
	tok := e.InputTokens + e.OutputTokens + e.CacheReadTokens + e.CacheWriteTokens
	var toks string
	if tok > 0 {
		toks = Count(tok) + " tokens"
	}
	var dur string
	if e.DurationMS > 0 {
		dur = Seconds(time.Duration(e.DurationMS) * time.Millisecond)
	}
	class := e.Class
	if class == "" {
		class = "ok"
	}
	return RecentLine{
		Time:  e.Time.In(loc).Format("15:04:05"),
		Class: strings.ReplaceAll(class, "_", " "),
		Level: ClassLevel(class),
		Text:  joinNonEmpty(" · ", orNone(label, e.Provider), model, toks, dur, orNone(e.ClientApp, e.Client)),
	}
}

// ClassLevel colours a request's class: green served, blue a refusal that
// passes by itself, amber the request's own fault, red one that needs the
// user.
func ClassLevel(class string) Level {
	switch class {
	case "", "ok":
		return LevelGood
	case "rate_limit", "capacity", "transient", "auth_expired":
		return LevelInfo
	case "client_error":
		return LevelWarn
	case "auth_invalid", "payment":
		return LevelBad
	}
	return LevelNeutral // aborted, and anything new
}

// Count writes a token count short: 950, 12.3k, 4.5M, 1.2B.
func Count(n int64) string {
	f := float64(n)
	for _, u := range []struct {
		at  float64
		sfx string
	}{{1e9, "B"}, {1e6, "M"}, {1e3, "k"}} {
		// 999,960 is "1M", not "1000k".
		if math.Abs(f) >= u.at*0.9995 {
			v := f / u.at
			if math.Abs(v) >= 100 {
				return fmt.Sprintf("%.0f%s", v, u.sfx)
			}
			return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + u.sfx
		}
	}
	return fmt.Sprintf("%d", n)
}

// Seconds writes a request's duration: "850ms", "3.4s", "2m05s".
func Seconds(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", d.Seconds()), ".0") + "s"
	}
	return Dur(d)
}

func refused(r api.UsageRow) string {
	var n int64
	for _, c := range r.Refusals {
		n += c
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d refused", n)
}

func waited(r api.UsageRow) string {
	if r.WaitedMS < 1000 {
		return ""
	}
	return Dur(time.Duration(r.WaitedMS)*time.Millisecond) + " waiting"
}

// cost is the API keys' estimated cost; subscriptions are included, never
// a made-up price.
func cost(r api.UsageRow) string {
	switch {
	case r.CostUSD >= 0.005:
		return fmt.Sprintf("$%.2f", r.CostUSD)
	case r.CostUSD > 0:
		return "< $0.01"
	case r.Included > 0 && r.Included == r.Requests:
		return "included"
	}
	return ""
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// short lists lines on one line, largest first: "Tools: claude-code 700k,
// codex 36k"; empty for none.
func short(title string, lines []UsageLine) string {
	if len(lines) == 0 {
		return ""
	}
	parts := make([]string, len(lines))
	for i, l := range lines {
		parts[i] = l.Name + " " + l.Tokens
	}
	return title + ": " + strings.Join(parts, ", ")
}
