package classify

import (
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var fuzzProfiles = func() []*Profile {
	var ps []*Profile
	for _, n := range Names() {
		ps = append(ps, Lookup(n))
	}
	return append(ps, Custom("edge", "openai", "egress"), nil, &Profile{})
}()

// headerBlob turns "Key: value" lines into a header, as the CLI does. A
// key written "=key" goes into the map as is, not canonicalized, as a
// hand-built header would.
func headerBlob(s string) http.Header {
	h := http.Header{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if raw, ok := strings.CutPrefix(k, "="); ok {
				h[raw] = append(h[raw], v)
			} else {
				h.Add(k, v)
			}
		}
	}
	return h
}

func FuzzVerdict(f *testing.F) {
	addVerdictSeeds(f)

	f.Fuzz(func(t *testing.T, pi uint8, status int, headers string, body []byte, event string, nowUnix int64) {
		p := fuzzProfiles[int(pi)%len(fuzzProfiles)]
		now := time.Unix(nowUnix%(1<<40), 0)
		h := headerBlob(headers)

		v := Classify(p, Response{Status: status, Header: h, Body: body}, now)
		checkVerdict(t, v)
		if again := Classify(p, Response{Status: status, Header: h, Body: body}, now); again != v {
			t.Fatalf("not deterministic: %+v then %+v", v, again)
		}

		ev, isErr := ClassifyEvent(p, event, body, now)
		checkVerdict(t, ev)
		if isErr == (ev.Class == OK) {
			t.Fatalf("isError %v with class %s", isErr, ev.Class)
		}
		if isErr != (ev.Status >= 400 && ev.Status <= 599) {
			t.Fatalf("isError %v with status %d", isErr, ev.Status)
		}

		if q, ok := ReadWindows(h, now); ok {
			checkQuota(t, q, now)
		}
		if q, err := ReadClaudeUsage(body, now); err == nil {
			checkQuota(t, q, now)
		}
		if q, err := ReadCodexUsage(body, now); err == nil {
			checkQuota(t, q, now)
		}
		if q, ok := ReadRateLimitEvent(event, body, now); ok {
			checkQuota(t, q, now)
		}

		for _, l := range ReadGoogleLimits(body, now) {
			if !l.ResetsAt.IsZero() && (!l.ResetsAt.After(now) || l.ResetsAt.After(now.Add(MaxRetryAfter))) {
				t.Fatalf("google limit resets %v for now %v: %+v", l.ResetsAt, now, l)
			}
			if l.Period != 0 && l.Period != time.Minute && l.Period != GoogleDay || l.Limit < -1 {
				t.Fatalf("google limit %+v", l)
			}
		}
		reset := GoogleDailyReset(now)
		if !reset.After(now) || reset.Sub(now) > 25*time.Hour {
			t.Fatalf("daily reset %v for now %v", reset, now)
		}
		// The rule the package falls back on agrees with the zone
		// database for every year it has held (the US rule since 2007).
		if y := now.Year(); y >= 2007 && y <= 3000 && !reset.Equal(pacificMidnightByRule(now)) {
			t.Fatalf("daily reset %v, by rule %v, for now %v", reset, pacificMidnightByRule(now), now)
		}

		if n, reset, ok := ParseBudget(h, now); ok && (n < 0 || !reset.After(now) || reset.After(now.Add(MaxRetryAfter))) {
			t.Fatalf("budget %d until %v for now %v", n, reset, now)
		}
	})
}

// addVerdictSeeds seeds the fuzzer with the corpus, the window samples and shapes gone wrong.
func addVerdictSeeds(f *testing.F) {
	for _, s := range loadCorpus(f) {
		var lines []string
		for k, v := range s.Headers {
			lines = append(lines, k+": "+v)
		}
		pi := 0
		for i, n := range Names() {
			if n == s.Provider {
				pi = i
			}
		}
		f.Add(uint8(pi), s.Status, strings.Join(lines, "\n"), s.body(f), s.Event, s.now(f).Unix())
	}
	for _, s := range loadWindowSamples(f) {
		var lines []string
		for k, v := range s.Headers {
			lines = append(lines, k+": "+v)
		}
		f.Add(uint8(0), 200, strings.Join(lines, "\n"), []byte(s.Body), "", int64(1788580000))
	}
	f.Add(uint8(0), 429, "Retry-After: 1e309\nRetry-After-Ms: NaN\nAnthropic-Ratelimit-Unified-Reset: -1", []byte(`{"error":{"resets_at":1e999,"resets_in_seconds":"-1"}}`), "", int64(0))
	f.Add(uint8(3), 429, "", []byte(`{"error":{"message":"[1308][reset at 9999-99-99 99:99:99]"}}`), "error", int64(math.MaxInt64))
	f.Add(uint8(1), 200, "X-Ratelimit-Remaining-Requests: 18446744073709551616\nX-Ratelimit-Reset-Requests: 9999999999h\nAnthropic-Ratelimit-Requests-Remaining: 0.5\nAnthropic-Ratelimit-Requests-Reset: 9999-12-31T23:59:59Z", []byte(nil), "", int64(0))
	f.Add(uint8(1), 200, "", []byte(`{"type":"codex.rate_limits","metered_limit_name":"-","rate_limits":{"limit_reached":true,"primary":{"used_percent":1e3,"window_minutes":-5,"reset_at":99999999999999},"secondary":{"used_percent":"100","reset_after_seconds":"NaN"}}}`), "codex.rate_limits", int64(1788580000))
	f.Add(uint8(0), 429, "=anthropic-ratelimit-unified-7d_oi-status: rejected\n=anthropic-ratelimit-unified-7d_oi-reset: 1788000000\n=x-codex-primary-used-percent: 100", []byte(nil), "", int64(1787000000))
	// Google shapes gone wrong: details that are not objects, a
	// RetryInfo as an object, resets past the cap or unparsable, a
	// negative quota, arrays, a message that ends inside "limit:" and
	// ", model: ".
	g := uint8(slices.Index(Names(), "google"))
	f.Add(g, 429, "", []byte(`[{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[null,1,"x",{"@type":7},`+
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":"nope"},`+
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[null,{"quotaId":"PerDayPerMinute","quotaValue":"-3","quotaDimensions":[]}]},`+
		`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":{"seconds":5}},`+
		`{"@type":"/google.rpc.ErrorInfo","reason":"QUOTA_EXHAUSTED","metadata":{"model":"","quotaResetTimeStamp":"9999-12-31T23:59:59Z","quotaResetDelay":"1e309s"}}]}}]`), "", int64(1788580000))
	f.Add(g, 429, "", []byte(`{"error":{"code":"429","message":"x limit: 0.0, model: ","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED","metadata":{"quota_limit":"DailyPerMinute","quota_limit_value":"99999999999999999999","quotaResetTimeStamp":"2026-09-10T00:00:00+99:00"}},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.000000001s"}]}}`), "", int64(-62135596800))
	f.Add(g, 200, "", []byte(`[{"error":{"code":503,"message":"The model is overloaded. limit:","status":"UNAVAILABLE"}},{"error":null}]`), "", int64(1772964000))
	f.Add(g, 429, "", []byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Your quota will reset after 99999999h","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}`), "", int64(1793494800))
}

func checkWindow(t *testing.T, used float64, reset *time.Time, now time.Time) {
	t.Helper()
	if math.IsNaN(used) || used < 0 || used > 2 {
		t.Fatalf("used %v", used)
	}
	if reset != nil && (reset.Before(now.Add(-time.Second)) || reset.After(now.Add(MaxRetryAfter))) {
		t.Fatalf("reset %v for now %v", reset, now)
	}
}

// checkQuota holds a read quota to its promises: at most one binding
// window, uses and resets in range, names present.
func checkQuota(t *testing.T, q Quota, now time.Time) {
	t.Helper()
	binding := 0
	for _, w := range q.Windows {
		checkWindow(t, w.Used, w.ResetsAt, now)
		if w.Name == "" {
			t.Fatalf("unnamed window %+v", w)
		}
		if w.Binding {
			binding++
		}
	}
	if binding > 1 || binding == 0 && len(q.Windows) > 0 {
		t.Fatalf("%d binding windows in %+v", binding, q.Windows)
	}
}

// allowedScopes says which scopes each class may carry.
var allowedScopes = map[Class][]Scope{
	OK:          {ScopeNone},
	RateLimit:   {ScopeCredential, ScopeModel, ScopeProvider},
	Transient:   {ScopeNone},
	Capacity:    {ScopeNone},
	AuthExpired: {ScopeCredential},
	AuthInvalid: {ScopeCredential},
	Payment:     {ScopeCredential, ScopeModel},
	ClientError: {ScopeNone},
	Aborted:     {ScopeNone},
	// A region refusal reaches every credential behind the egress.
	RegionBlocked: {ScopeProvider},
}

func checkVerdict(t *testing.T, v Verdict) {
	t.Helper()
	if !v.Class.Valid() || !v.Scope.Valid() {
		t.Fatalf("invalid verdict %+v", v)
	}
	ok := false
	for _, s := range allowedScopes[v.Class] {
		ok = ok || s == v.Scope
	}
	if !ok {
		t.Fatalf("class %s with scope %q", v.Class, v.Scope)
	}
	if v.RetryAfter < 0 || v.RetryAfter > MaxRetryAfter {
		t.Fatalf("retry after %v", v.RetryAfter)
	}
	switch v.Class {
	case RateLimit, Capacity, Transient, Payment:
	default:
		if v.RetryAfter != 0 {
			t.Fatalf("class %s carries retry after %v", v.Class, v.RetryAfter)
		}
	}
	// Tool says the credential is not at fault: only a client error,
	// which reaches no credential, may carry it.
	if v.Tool && (v.Class != ClientError || v.Scope != ScopeNone) {
		t.Fatalf("tool refusal as class %s scope %q", v.Class, v.Scope)
	}
	if v.Reason == "" || len(v.Reason) > 300 || !utf8.ValidString(v.Reason) || strings.ContainsAny(v.Reason, "\n\r\x00") {
		t.Fatalf("bad reason %q", v.Reason)
	}
}
