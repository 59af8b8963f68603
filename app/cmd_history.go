package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
)

func cmdHistory(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("history", "[-n 50] [--class C] [--before ID] [--json] [--home DIR]",
		"The last requests, newest first, one line each: time, credential, model, status, class, tokens, duration.")
	n := f.Int("n", 50, "how many requests (at most 1000)")
	class := f.String("class", "", "only this class: ok, rate_limit, transient, capacity, auth_expired, auth_invalid, payment, client_error, aborted, refused")
	before := f.Int64("before", 0, "only requests older than this id (paging)")
	asJSON := f.Bool("json", false, "print the page as JSON")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 0, "", stdout, stderr); done {
		return code
	}
	if *class != "" && !historyClass(*class) {
		names := []string{}
		for _, c := range historyClasses {
			names = append(names, string(c))
		}
		fmt.Fprintf(stderr, "subpool history: --class %q is not a class;%s use one of %s\n", *class, didYouMean(*class, names), strings.Join(names, ", "))
		return 2
	}
	if *n < 1 {
		fmt.Fprintln(stderr, "subpool history: -n must be 1 or more")
		return 2
	}
	var page api.HistoryPage
	err := withHistory(*home, func(ctx context.Context, h historySource) error {
		var err error
		page, err = h.List(ctx, api.HistoryQuery{Limit: *n, Class: *class, Before: *before})
		return err
	})
	if err != nil {
		return fail(stderr, "history", cleanAPIErr(err))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(page)
		return 0
	}
	if len(page.Entries) == 0 {
		fmt.Fprintln(stdout, "no requests recorded")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIME\tCREDENTIAL\tMODEL\tSTATUS\tCLASS\tIN\tOUT\tCACHE\tDURATION\tAPP")
	for _, e := range page.Entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Time.Local().Format("01-02 15:04:05"),
			historyWho(e), historyModel(e), e.Status, e.Class, tokenCount(e.InputTokens), tokenCount(e.OutputTokens),
			tokenCount(e.CacheReadTokens+e.CacheWriteTokens), msWords(e.DurationMS), dash(e.ClientApp))
	}
	tw.Flush()
	if page.Next > 0 {
		fmt.Fprintf(stdout, "older: subpool history --before %d\n", page.Next)
	}
	return 0
}

// historyClasses are the classes a history row can carry: the
// classifier's, and the proxy's own refusal of a client.
var historyClasses = []classify.Class{classify.OK, classify.RateLimit, classify.Transient, classify.Capacity, classify.AuthExpired,
	classify.AuthInvalid, classify.Payment, classify.ClientError, classify.Aborted, "refused"}

// historyClass reports whether c can be asked for; the classifier's own
// test decides, so a class added there is known here.
func historyClass(c string) bool {
	return classify.Class(c).Valid() || slices.Contains(historyClasses, classify.Class(c))
}

func historyWho(e api.HistoryEntry) string {
	who := e.Provider
	switch {
	case e.Label != "":
		who += "/" + e.Label
	case e.CredentialID != "":
		who += "/" + e.CredentialID
	}
	return who
}

func historyModel(e api.HistoryEntry) string {
	m := dash(e.Model)
	if e.FallbackTo != "" {
		return m + " -> " + e.FallbackTo
	}
	if e.ServedModel != "" && e.ServedModel != e.Model {
		return m + " -> " + e.ServedModel
	}
	return m
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
