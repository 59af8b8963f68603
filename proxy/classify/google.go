package classify

import (
	"strconv"
	"strings"
	"time"
)

// Google's errors (the Gemini API and Code Assist alike) follow
// google.rpc.Status:
//
//	{"error":{"code":429,"message":"…","status":"RESOURCE_EXHAUSTED",
//	  "details":[
//	    {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[
//	      {"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests",
//	       "quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
//	       "quotaDimensions":{"location":"global","model":"gemini-2.5-pro"},"quotaValue":"5"}]},
//	    {"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"QUOTA_EXHAUSTED",
//	     "domain":"cloudcode-pa.googleapis.com",
//	     "metadata":{"model":"gemini-2.5-pro","quotaResetDelay":"8h44m7.1s","quotaResetTimeStamp":"2026-09-10T08:44:07Z"}},
//	    {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}
//
// status is the canonical code and ErrorInfo.reason the specific one;
// both are identifiers the tables match. The rest (which quotas are
// spent, for which model, until when) is read here, as Gemini CLI reads
// it (packages/core/src/utils/googleQuotaErrors.ts, classifyGoogleError).

// googleFields is what a Google error says beyond its codes.
type googleFields struct {
	limits []GoogleLimit
	model  string // the model a spent limit names
	// perModel: a spent limit counts one model (quotaId "…PerModel…", a
	// Code Assist metric named for a model family) even where the body
	// names no model.
	perModel   bool
	zero       bool   // a spent limit of size 0: the tier has none of it
	retryDelay string // RetryInfo.retryDelay, "37s"
	// The Code Assist ErrorInfo's own reset, when it gives one.
	resetStamp, resetDelay string
}

// GoogleLimit is one quota a Google refusal reports spent: a violation of
// its QuotaFailure, or the limit its ErrorInfo names (Code Assist). It is
// what a quota meter needs of a refusal: which limit, over what period,
// for which model, how big, and when it refills.
type GoogleLimit struct {
	// QuotaID names the limit: "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
	// or an ErrorInfo's quota_limit ("Gemini25ProRequestsPerDayPerUserPerTier").
	// "" when the ErrorInfo names no limit (Code Assist's QUOTA_EXHAUSTED).
	QuotaID string
	// Metric is what the limit counts:
	// "generativelanguage.googleapis.com/generate_content_free_tier_requests".
	Metric string
	// Reason is the ErrorInfo reason for a limit read from one
	// ("QUOTA_EXHAUSTED", "RATE_LIMIT_EXCEEDED"); "" for a violation.
	Reason string
	Model  string // "gemini-2.5-pro"; "" when the limit names none
	// Period is the limit's window as its id names it: time.Minute for
	// "PerMinute", GoogleDay for "PerDay"/"Daily"; 0 when it names none.
	Period time.Duration
	// Counts is "requests" or "tokens" as the id or metric says; "" when
	// neither does.
	Counts string
	// Limit is the limit's size (quotaValue, quota_limit_value); -1 when
	// not given.
	Limit int64
	// ResetsAt is when the limit refills: a daily limit at the next
	// midnight Pacific (GoogleDailyReset), else the refusal's own reset
	// (ErrorInfo, RetryInfo); zero when unknown.
	ResetsAt time.Time
}

// GoogleDay is the period of Google's daily limits.
const GoogleDay = 24 * time.Hour

// ReadGoogleLimits reads the limits a Google error body reports spent
// (see GoogleLimit), nil when it reports none. now turns its delays into
// reset times.
func ReadGoogleLimits(body []byte, now time.Time) []GoogleLimit {
	if len(body) > MaxBody {
		body = body[:MaxBody]
	}
	f := parseBody(body)
	g := f.g
	if g == nil || len(g.limits) == 0 {
		return nil
	}
	var a resetAcc
	g.resets(&a, strings.ToLower(f.msg), now, false)
	own := a.result()
	out := make([]GoogleLimit, len(g.limits))
	for i, l := range g.limits {
		switch {
		case g.zero: // a limit of size 0 refills never
		case l.Period == GoogleDay && g.resetStamp == "" && g.resetDelay == "":
			l.ResetsAt = GoogleDailyReset(now)
		case own > 0:
			l.ResetsAt = now.Add(own)
		}
		out[i] = l
	}
	return out
}

// google marks f as a Google error.
func (f *fields) google() *googleFields {
	if f.g == nil {
		f.g = &googleFields{}
	}
	return f.g
}

// isCanonicalCode: one of google.rpc.Code's names, as error.status carries
// it ("RESOURCE_EXHAUSTED"); relays that write "Too Many Requests" there
// say nothing a table reads.
func isCanonicalCode(s string) bool {
	if len(s) < 2 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}

// detailType is a details entry's type without its URL prefix:
// "google.rpc.QuotaFailure".
func detailType(m object) string {
	t := scalar(m["@type"])
	return t[strings.LastIndexByte(t, '/')+1:]
}

// googleDetails reads google.rpc.Status details: ErrorInfo's reason and
// metadata, QuotaFailure's violations, RetryInfo's delay. Other entries
// (Help links, LocalizedMessage, DebugInfo) say nothing the verdict uses,
// and DebugInfo may echo the key.
func (f *fields) googleDetails(list []any) {
	g := f.google()
	for _, d := range list {
		m, ok := d.(object)
		if !ok {
			continue
		}
		switch detailType(m) {
		case "google.rpc.ErrorInfo":
			reason := scalar(m["reason"])
			f.addID(reason, rankDetails)
			if md, ok := m["metadata"].(object); ok {
				g.errorInfo(reason, md)
			}
		case "google.rpc.QuotaFailure":
			vs, _ := m["violations"].([]any)
			for _, v := range vs {
				if v, ok := v.(object); ok {
					g.violation(v)
				}
			}
		case "google.rpc.RetryInfo":
			if s := scalar(m["retryDelay"]); s != "" {
				g.retryDelay = s
			}
		}
	}
}

func (g *googleFields) violation(v object) {
	l := GoogleLimit{QuotaID: scalar(v["quotaId"]), Metric: scalar(v["quotaMetric"]), Limit: -1}
	if dims, ok := v["quotaDimensions"].(object); ok {
		l.Model = scalar(dims["model"])
	}
	l.Limit = googleCount(scalar(v["quotaValue"]))
	g.add(l)
}

// errorInfo reads an ErrorInfo's metadata. Code Assist names the model and
// when its quota refills; the Gemini API's older answers name the limit
// (quota_limit, quota_metric, quota_limit_value).
func (g *googleFields) errorInfo(reason string, md object) {
	model := scalar(md["model"])
	if s := scalar(md["quotaResetTimeStamp"]); s != "" {
		g.resetStamp = s
	}
	if s := scalar(md["quotaResetDelay"]); s != "" {
		g.resetDelay = s
	}
	id := scalar(md["quota_limit"])
	switch {
	case id != "":
		g.add(GoogleLimit{QuotaID: id, Metric: scalar(md["quota_metric"]), Reason: reason, Model: model,
			Limit: googleCount(scalar(md["quota_limit_value"]))})
	case model != "" && (reason == "QUOTA_EXHAUSTED" || reason == "RATE_LIMIT_EXCEEDED"):
		g.add(GoogleLimit{Reason: reason, Model: model, Limit: -1})
	case model != "" && g.model == "":
		g.model = model
	}
}

func (g *googleFields) add(l GoogleLimit) {
	id := l.QuotaID
	switch {
	case strings.Contains(id, "PerMinute"):
		l.Period = time.Minute
	case strings.Contains(id, "PerDay"), strings.Contains(id, "Daily"):
		l.Period = GoogleDay
	}
	lower := strings.ToLower(id + " " + l.Metric)
	switch {
	case strings.Contains(lower, "token"):
		l.Counts = "tokens"
	case strings.Contains(lower, "request"):
		l.Counts = "requests"
	}
	if l.Limit == 0 {
		g.zero = true
	}
	if l.Model != "" && g.model == "" {
		g.model = l.Model
	}
	// "…PerModel…" counts one model; Code Assist's limits are named for
	// the model family they count ("Gemini25ProRequestsPerDayPerUserPerTier",
	// "cloudcode-pa.googleapis.com/gemini_2_5_pro_requests").
	if strings.Contains(id, "PerModel") || strings.Contains(lower, "gemini") {
		g.perModel = true
	}
	g.limits = append(g.limits, l)
}

// googleCount reads a quota's size; -1 when it is not a plain count.
func googleCount(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// fromMessage reads what only the message says. The free tier's "limit:
// 0" ("* Quota exceeded for metric: …, limit: 0, model: gemini-2.0-flash")
// means the tier includes none of that model: Gemini CLI takes it as
// terminal before anything else (/limit:\s*0(?!\d|\.\d)/), and the
// QuotaFailure beside it often carries no quotaValue.
func (g *googleFields) fromMessage(lower string) {
	for rest := lower; ; {
		_, after, ok := strings.Cut(rest, "limit:")
		if !ok {
			break
		}
		rest = strings.TrimLeft(after, " ")
		if strings.HasPrefix(rest, "0") && !zeroContinues(rest[1:]) {
			g.zero = true
			break
		}
	}
	if g.model == "" {
		if _, after, ok := strings.Cut(lower, ", model: "); ok {
			end := strings.IndexFunc(after, func(r rune) bool { return r <= ' ' || r == ',' || r == '\\' })
			if end < 0 {
				end = len(after)
			}
			if m := after[:end]; strings.HasPrefix(m, "gemini") {
				g.model = m
			}
		}
	}
}

// zeroContinues: the "0" of "limit: 0" goes on as a number ("00", "0.5").
func zeroContinues(s string) bool {
	if s == "" {
		return false
	}
	if s[0] >= '0' && s[0] <= '9' {
		return true
	}
	return s[0] == '.' && len(s) > 1 && s[1] >= '0' && s[1] <= '9'
}

// hasPeriod: a spent limit is of that period, counting what (any when
// counts is "").
func (g *googleFields) hasPeriod(p time.Duration, counts string) bool {
	for _, l := range g.limits {
		if l.Period == p && (counts == "" || l.Counts == counts) {
			return true
		}
	}
	return false
}

// namesModel: the spent limit is a model's, so it cools that model only.
func (g *googleFields) namesModel() bool {
	return g != nil && (g.model != "" || g.perModel)
}

// A Google quota condition a rule may require (rule.gq).
type googleQuota uint8

const (
	gqNone googleQuota = iota
	// gqZero: a spent limit of size 0 (the tier includes none of it).
	gqZero
	// gqZeroModel: the same, for a limit that names its model.
	gqZeroModel
	gqDay           // a daily limit is spent
	gqMinuteRequest // a per-minute request limit is spent
	gqMinuteToken   // a per-minute token limit is spent
	gqMinute        // a per-minute limit is spent, counting what it does not say
)

// googleQuotaHolds reports whether f meets q.
func googleQuotaHolds(q googleQuota, f *fields) bool {
	g := f.g
	if g == nil {
		return false
	}
	switch q {
	case gqZero:
		return g.zero
	case gqZeroModel:
		return g.zero && g.namesModel()
	case gqDay:
		return g.hasPeriod(GoogleDay, "")
	case gqMinuteRequest:
		return g.hasPeriod(time.Minute, "requests")
	case gqMinuteToken:
		return g.hasPeriod(time.Minute, "tokens")
	case gqMinute:
		return g.hasPeriod(time.Minute, "")
	}
	return true
}

// googleRetryAfter adds the reset signals of a Google refusal: RetryInfo,
// Code Assist's ErrorInfo reset and its message ("Your quota will reset
// after 8h44m7s.", "Resets in 9h22m20s.", "Please retry in 44.09s."),
// the daily reset for a spent daily limit, and a minute for a per-minute
// one that gave no time (Gemini CLI's own default). A limit of size 0
// resets never: its retry hint is the per-minute one beside it and means
// nothing.
func googleRetryAfter(a *resetAcc, f *fields, lower string, now time.Time) {
	if f.g == nil {
		a.add(googleMessageReset(lower), true)
		return
	}
	f.g.resets(a, lower, now, true)
}

func (g *googleFields) resets(a *resetAcc, lower string, now time.Time, fallbacks bool) {
	if g.zero {
		return
	}
	// Each of these is the spent limit's own reset: Google's RetryInfo on
	// a quota refusal says when the quota lets the request through.
	a.add(parseResetDuration(g.retryDelay), true)
	a.add(parseResetDuration(g.resetDelay), true)
	if t, err := time.Parse(time.RFC3339Nano, g.resetStamp); err == nil {
		a.add(t.Sub(now), true)
	}
	a.add(googleMessageReset(lower), true)
	if !fallbacks {
		return
	}
	// A daily limit refills at midnight Pacific, whatever per-minute
	// retry hint rides along ("retryDelay":"22s" beside a spent
	// GenerateRequestsPerDay…): unless Code Assist gave its own reset.
	if g.resetStamp == "" && g.resetDelay == "" && g.hasPeriod(GoogleDay, "") {
		a.add(GoogleDailyReset(now).Sub(now), true)
	}
	if a.result() == 0 && g.hasPeriod(time.Minute, "") {
		a.add(time.Minute, false)
	}
}

// googleMessageReset reads the reset Code Assist and the Gemini API write
// into their messages.
func googleMessageReset(lower string) time.Duration {
	for _, lead := range []string{"will reset after ", "resets in ", "please retry in "} {
		if _, rest, ok := strings.Cut(lower, lead); ok {
			if d, ok := humanDuration(rest); ok {
				return d
			}
		}
	}
	return 0
}
