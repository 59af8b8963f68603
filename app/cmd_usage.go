package app

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/history"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
)

func cmdUsage(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("usage", "[--since 24h|7d|2026-11-01] [--by day|hour|credential|model|client|app|provider] [--json|--csv] [--home DIR]",
		"Totals from the request history: requests, tokens by kind, refusals by class, time spent waiting, estimated cost of API-key requests (subscriptions show as included).")
	since := f.String("since", history.DefaultSince, "how far back: a duration (24h, 7d) or a date (2026-11-01)")
	by := f.String("by", api.ByDay, "group by "+strings.Join(history.ByNames(), ", "))
	asJSON := f.Bool("json", false, "print the report as JSON")
	asCSV := f.Bool("csv", false, "print the rows as CSV")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 0, "", stdout, stderr); done {
		return code
	}
	var rep api.UsageReport
	err := withHistory(*home, func(ctx context.Context, h historySource) error {
		var err error
		rep, err = h.Usage(ctx, *since, *by)
		return err
	})
	if err != nil {
		return fail(stderr, "usage", cleanAPIErr(err))
	}
	switch {
	case *asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	case *asCSV:
		writeUsageCSV(stdout, rep)
	default:
		printUsage(stdout, rep)
	}
	return 0
}

// historySource is the running proxy's admin API or the home's file.
type historySource interface {
	Usage(ctx context.Context, since, by string) (api.UsageReport, error)
	List(ctx context.Context, q api.HistoryQuery) (api.HistoryPage, error)
}

// clientHistory is the running proxy's history, as a historySource.
type clientHistory struct{ c *client.Client }

func (c clientHistory) Usage(ctx context.Context, since, by string) (api.UsageReport, error) {
	return c.c.Usage(ctx, since, by)
}

func (c clientHistory) List(ctx context.Context, q api.HistoryQuery) (api.HistoryPage, error) {
	return c.c.History(ctx, q)
}

// withHistory runs fn against the running proxy when one answers (it has
// the rows not yet committed and the live drop count), else against the
// home's history.db opened read-only: no lock needed, a reader never
// disturbs a writer.
func withHistory(homeFlag string, fn func(context.Context, historySource) error) error {
	return onHome(homeFlag, func(c *client.Client, _ string, _ config.Config) historySource { return clientHistory{c} }, openHistoryFile, fn)
}

// openHistoryFile opens the home's history.db read-only.
func openHistoryFile(home string, cfg config.Config) (historySource, io.Closer, error) {
	db, err := history.OpenReadOnly(filepath.Join(home, history.FileName))
	if errors.Is(err, fs.ErrNotExist) {
		if !cfg.History.Enabled {
			return nil, nil, errors.New("no history: it is off ([history] enabled = false in config.toml)")
		}
		return nil, nil, fmt.Errorf("no history yet in %s: it fills as `subpool serve` answers requests", home)
	}
	if err != nil {
		return nil, nil, err
	}
	return db, db, nil
}

func printUsage(w io.Writer, rep api.UsageReport) {
	fmt.Fprintf(w, "since %s, by %s\n", rep.Since.Local().Format("2006-01-02 15:04"), rep.By)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "KEY\tREQUESTS\tINPUT\tOUTPUT\tCACHE READ\tCACHE WRITE\tREFUSALS\tWAITED\tCOST\t")
	line := func(r api.UsageRow) {
		key := r.Key
		if r.Label != "" {
			key += " (" + r.Label + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", key, r.Requests, tokenCount(r.InputTokens), tokenCount(r.OutputTokens),
			tokenCount(r.CacheReadTokens), tokenCount(r.CacheWriteTokens), refusalWords(r.Refusals), msWords(r.WaitedMS), costWords(r))
	}
	for _, r := range rep.Rows {
		line(r)
	}
	if len(rep.Rows) != 1 {
		line(rep.Total)
	}
	tw.Flush()
	if rep.Dropped > 0 {
		fmt.Fprintf(w, "%d requests were not recorded: the history writer fell behind\n", rep.Dropped)
	}
}

func tokenCount(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}

func msWords(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func refusalWords(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	return refusalList(m, " ", " ")
}

func refusalList(m map[string]int64, kv, sep string) string {
	classes := make([]string, 0, len(m))
	for c := range m {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = fmt.Sprintf("%s%s%d", c, kv, m[c])
	}
	return strings.Join(parts, sep)
}

// costWords never turns a subscription into a dollar figure.
func costWords(r api.UsageRow) string {
	priced := r.Requests - r.Included - r.Unpriced
	var parts []string
	if priced > 0 || r.CostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", r.CostUSD))
	}
	if r.Included > 0 {
		parts = append(parts, "included")
	}
	if r.Unpriced > 0 {
		parts = append(parts, fmt.Sprintf("%d unpriced", r.Unpriced))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " + ")
}

func writeUsageCSV(w io.Writer, rep api.UsageReport) {
	cw := csv.NewWriter(w)
	cw.Write([]string{"key", "label", "requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
		"refusals", "waited_ms", "cost_usd", "included", "unpriced"})
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, r := range rep.Rows {
		cw.Write([]string{r.Key, r.Label, i(r.Requests), i(r.InputTokens), i(r.OutputTokens), i(r.CacheReadTokens), i(r.CacheWriteTokens),
			refusalList(r.Refusals, "=", ";"), i(r.WaitedMS), strconv.FormatFloat(r.CostUSD, 'f', 6, 64), i(r.Included), i(r.Unpriced)})
	}
	cw.Flush()
}
