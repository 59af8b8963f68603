package classify

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Google's daily quotas refill at midnight Pacific: PDT in summer, PST in
// winter, and on the days the clocks change, midnight of the next day
// wears the new offset.
func TestGoogleDailyReset(t *testing.T) {
	cases := []struct{ now, want string }{
		{"2026-09-10T15:30:00Z", "2026-09-11T07:00:00Z"}, // 08:30 PDT
		{"2026-09-10T06:59:59Z", "2026-09-10T07:00:00Z"}, // 23:59:59 PDT
		{"2026-09-10T07:00:00Z", "2026-09-11T07:00:00Z"}, // midnight itself: the next one
		{"2026-12-01T20:00:00Z", "2026-12-02T08:00:00Z"}, // 12:00 PST
		// 2026: daylight time from 8 March to 1 November.
		{"2026-03-07T20:00:00Z", "2026-03-08T08:00:00Z"}, // Saturday 12:00 PST: the change day's midnight is still PST
		{"2026-03-08T09:00:00Z", "2026-03-09T07:00:00Z"}, // Sunday 01:00 PST, before the change
		{"2026-03-08T11:00:00Z", "2026-03-09T07:00:00Z"}, // Sunday 04:00 PDT, after it
		{"2026-10-31T20:00:00Z", "2026-11-01T07:00:00Z"}, // Saturday 13:00 PDT
		{"2026-11-01T08:30:00Z", "2026-11-02T08:00:00Z"}, // Sunday 01:30 PDT, before the change back
		{"2026-11-01T10:00:00Z", "2026-11-02T08:00:00Z"}, // Sunday 02:00 PST, after it
		{"2027-03-14T08:00:00Z", "2027-03-15T07:00:00Z"}, // 2027's change day (14 March), 00:00 PST
	}
	for _, c := range cases {
		now, want := mustTime(t, c.now), mustTime(t, c.want)
		if got := GoogleDailyReset(now); !got.Equal(want) {
			t.Errorf("GoogleDailyReset(%s) = %s, want %s", c.now, got.UTC().Format(time.RFC3339), c.want)
		}
		// The rule stands in where the system has no zone database
		// (Windows without Go): it must give the same instant.
		if got := pacificMidnightByRule(now); !got.Equal(want) {
			t.Errorf("by rule (%s) = %s, want %s", c.now, got.UTC().Format(time.RFC3339), c.want)
		}
	}
}

// The rule agrees with the zone database hour by hour over five years,
// change days included.
func TestPacificRuleMatchesZoneDatabase(t *testing.T) {
	loc, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatalf("this machine has no zone database to check the rule against: %v", err)
	}
	start := time.Date(2025, 1, 1, 0, 17, 0, 0, time.UTC)
	for now := start; now.Before(start.AddDate(5, 0, 0)); now = now.Add(time.Hour) {
		_, off := now.In(loc).Zone()
		if got := pacificOffset(now); got != time.Duration(off)*time.Second {
			t.Fatalf("offset at %s: %v, zone database %ds", now, got, off)
		}
		y, m, d := now.In(loc).Date()
		if want, got := time.Date(y, m, d+1, 0, 0, 0, 0, loc), pacificMidnightByRule(now); !got.Equal(want) {
			t.Fatalf("midnight after %s: %s, zone database %s", now, got, want)
		}
	}
}

func readGoogleSample(t *testing.T, name string) ([]byte, time.Time) {
	t.Helper()
	for _, s := range loadCorpus(t) {
		if s.Name == "google.json: "+name {
			return s.body(t), s.now(t)
		}
	}
	t.Fatalf("no google sample %q", name)
	return nil, time.Time{}
}

func TestReadGoogleLimits(t *testing.T) {
	body, now := readGoogleSample(t, "429 per-day request limit: until midnight Pacific (PDT), not the 22s RetryInfo")
	got := ReadGoogleLimits(body, now)
	want := []GoogleLimit{{
		QuotaID: "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
		Metric:  "generativelanguage.googleapis.com/generate_content_free_tier_requests",
		Model:   "gemini-2.5-flash", Period: GoogleDay, Counts: "requests", Limit: 250,
		ResetsAt: mustTime(t, "2026-09-11T07:00:00Z"),
	}}
	if !sameLimits(got, want) {
		t.Errorf("per day:\n got %+v\nwant %+v", got, want)
	}

	body, now = readGoogleSample(t, "429 per-minute token limit naming the model, RetryInfo 26s")
	want = []GoogleLimit{{
		QuotaID: "GenerateContentInputTokensPerModelPerMinute-FreeTier",
		Metric:  "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
		Model:   "gemini-2.5-flash", Period: time.Minute, Counts: "tokens", Limit: 250000,
		ResetsAt: now.Add(26 * time.Second),
	}}
	if got := ReadGoogleLimits(body, now); !sameLimits(got, want) {
		t.Errorf("per minute:\n got %+v\nwant %+v", got, want)
	}

	// Code Assist names the model and the reset, not the limit.
	body, now = readGoogleSample(t, "Code Assist 429 QUOTA_EXHAUSTED: until the ErrorInfo's reset, for that model")
	want = []GoogleLimit{{Reason: "QUOTA_EXHAUSTED", Model: "gemini-3.5-flash", Limit: -1,
		ResetsAt: mustTime(t, "2026-09-20T21:03:14Z")}}
	if got := ReadGoogleLimits(body, now); !sameLimits(got, want) {
		t.Errorf("Code Assist:\n got %+v\nwant %+v", got, want)
	}

	// The older Code Assist shape names its daily limit in ErrorInfo.
	body, now = readGoogleSample(t, "Code Assist 429 per-day quota (2025 shape): until midnight Pacific, for the Pro family")
	want = []GoogleLimit{{QuotaID: "Gemini25ProRequestsPerDayPerUserPerTier", Metric: "cloudcode-pa.googleapis.com/gemini_2_5_pro_requests",
		Reason: "RATE_LIMIT_EXCEEDED", Period: GoogleDay, Counts: "requests", Limit: -1, ResetsAt: GoogleDailyReset(now)}}
	if got := ReadGoogleLimits(body, now); !sameLimits(got, want) {
		t.Errorf("Code Assist per day:\n got %+v\nwant %+v", got, want)
	}

	// A limit of size 0 refills never: no reset, whatever RetryInfo says.
	body, now = readGoogleSample(t, "429 limit 0: the free tier includes none of this model")
	got = ReadGoogleLimits(body, now)
	if len(got) != 3 {
		t.Fatalf("limit 0: %d limits, want 3: %+v", len(got), got)
	}
	for _, l := range got {
		if !l.ResetsAt.IsZero() || l.Model != "gemini-2.0-flash-lite" {
			t.Errorf("limit 0: %+v", l)
		}
	}

	for _, b := range []string{
		`{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`,
		`{"type":"error","error":{"type":"rate_limit_error","message":"x"}}`,
		`not json`, ``,
	} {
		if got := ReadGoogleLimits([]byte(b), now); got != nil {
			t.Errorf("%q: %+v", b, got)
		}
	}
}

func sameLimits(a, b []GoogleLimit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.ResetsAt.Equal(y.ResetsAt) {
			return false
		}
		x.ResetsAt, y.ResetsAt = time.Time{}, time.Time{}
		if x != y {
			return false
		}
	}
	return true
}

// The google profile serves the gemini wire under any name; the nil
// profile knows Google's shapes too, before OpenAI's, whose "exceeded your
// current quota" is billing where Google's is a per-minute limit.
func TestGoogleProfiles(t *testing.T) {
	g := Lookup("google")
	if g == nil || g.Wire != "gemini" || !g.google {
		t.Fatalf("Lookup(google) = %+v", g)
	}
	for _, c := range []*Profile{Custom("google", "gemini", ""), Custom("my-gemini", "gemini", "credential")} {
		if len(c.rules) != len(g.rules) || !c.google || c.Wire != "gemini" {
			t.Errorf("Custom %s: %d rules, google %v", c.Name, len(c.rules), c.google)
		}
	}
	body, now := readGoogleSample(t, "429 per-minute token limit naming the model, RetryInfo 26s")
	r := Response{Status: 429, Body: body}
	for _, p := range []*Profile{nil, Custom("x", "grpc", "")} {
		if v := Classify(p, r, now); v.Class != RateLimit || v.Scope != ScopeModel || v.RetryAfter != 26*time.Second {
			t.Errorf("profile %v: %+v", p, v)
		}
	}
	// An egress-limited Gemini relay cools every credential behind it.
	if v := Classify(Custom("relay", "gemini", "egress"), r, now); v.Class != RateLimit || v.Scope != ScopeProvider {
		t.Errorf("egress: %+v", v)
	}
	// Google's wording means nothing special to OpenAI's table.
	if v := Classify(Lookup("openai"), Response{Status: 429, Body: []byte(`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`)}, now); v.Class != Payment {
		t.Errorf("openai insufficient_quota: %+v", v)
	}
	// A 401 nothing explains: refresh a login once (a key parks).
	if v := Classify(g, Response{Status: 401}, now); v.Class != AuthExpired {
		t.Errorf("bare 401: %+v", v)
	}
}

func TestGoogleStreamErrors(t *testing.T) {
	g := Lookup("google")
	for _, c := range []struct {
		name, data string
		class      Class
		status     int
	}{
		{"permission", `{"error":{"code":403,"message":"The caller does not have permission","status":"PERMISSION_DENIED"}}`, Payment, 403},
		{"invalid argument", `{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}`, ClientError, 400},
		{"deadline", `{"error":{"code":504,"message":"Deadline exceeded","status":"DEADLINE_EXCEEDED"}}`, Transient, 504},
		{"per-day quota in the stream", `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":{"model":"gemini-2.5-pro"}}]}]}}`, RateLimit, 429},
		{"an array holding the error", `[{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}]`, Capacity, 503},
		{"a status the map lacks: error.code", `{"error":{"code":418,"message":"x","status":"SOMETHING_NEW"}}`, ClientError, 418},
	} {
		v, isErr := ClassifyEvent(g, "", []byte(c.data), testNow)
		if !isErr || v.Class != c.class || v.Status != c.status {
			t.Errorf("%s: %s %d (error %v), want %s %d: %s", c.name, v.Class, v.Status, isErr, c.class, c.status, v.Reason)
		}
	}
	// A Gemini content chunk, and Code Assist's wrapped one, are content.
	for _, data := range []string{
		`{"candidates":[{"content":{"parts":[{"text":"error"}],"role":"model"}}],"usageMetadata":{"promptTokenCount":3}}`,
		`{"response":{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]},"traceId":"x"}`,
		`[{"candidates":[]}]`,
	} {
		if v, isErr := ClassifyEvent(g, "", []byte(data), testNow); isErr || v.Class != OK {
			t.Errorf("content %s: %+v %v", data, v, isErr)
		}
	}
}

// The per-day limit wins over its RetryInfo; the daily reset is the
// upstream's own, so a longer Retry-After header does not shorten it, and
// a per-minute limit's RetryInfo is what it says.
func TestGoogleResetChoice(t *testing.T) {
	g := Lookup("google")
	day := `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"RequestsPerDay-limit"},{"quotaId":"RequestsPerMinute-limit"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"10s"}]}}`
	v := Classify(g, Response{Status: 429, Body: []byte(day)}, testNow)
	if want := GoogleDailyReset(testNow).Sub(testNow); v.Class != RateLimit || v.RetryAfter != want || !strings.Contains(v.Reason, "daily") {
		t.Errorf("daily beside per-minute: %+v, want %v", v, want)
	}
	// Garbage delays are dropped, never trusted.
	for _, d := range []string{"-5s", "NaN", "1e309s", "soon", "9999999999999h", ""} {
		b := `{"error":{"code":429,"message":"x","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"` + d + `"},` +
			`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED","metadata":{"quotaResetTimeStamp":"` + d + `","quotaResetDelay":"` + d + `"}}]}}`
		if v := Classify(g, Response{Status: 429, Body: []byte(b)}, testNow); v.Class != RateLimit || v.RetryAfter != 0 {
			t.Errorf("delay %q: %+v", d, v)
		}
	}
	// "limit: 0" only when the number is zero.
	for msg, zero := range map[string]bool{
		"limit: 0, model: gemini-2.5-pro": true, "limit: 0\nPlease retry": true, "limit:0": true,
		"limit: 05": false, "limit: 0.5": false, "limit: 250": false, "limit: 2\n* limit: 0, model: x": true,
	} {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 429, "message": msg, "status": "RESOURCE_EXHAUSTED"}})
		v := Classify(g, Response{Status: 429, Body: b}, testNow)
		if (v.Class == Payment) != zero {
			t.Errorf("%q: %+v", msg, v)
		}
	}
}

// Google echoes a suspended key ("Consumer 'api_key:AIza…'"); access
// tokens start ya29. Neither reaches a reason.
func TestGoogleSecretsRedacted(t *testing.T) {
	body := `{"error":{"code":403,"message":"Permission denied: Consumer 'api_key:AIzaSyD-0123456789abcdefghijklmnopqrstu' has been suspended. Token ya29.a0AfH6SMBx","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"CONSUMER_SUSPENDED","domain":"googleapis.com"}]}}`
	v := Classify(Lookup("google"), Response{Status: 403, Body: []byte(body)}, testNow)
	if v.Class != AuthInvalid || strings.Contains(v.Reason, "AIza") || strings.Contains(v.Reason, "ya29") || !strings.Contains(v.Reason, "[redacted]") {
		t.Errorf("got %+v", v)
	}
	checkReason(t, v)
}

// Every Google rule rests on a corpus sample: a rule without one is a
// guess (ACCESS_TOKEN_EXPIRED, TOS_VIOLATION, … are Gemini CLI's and
// Google's own names, listed in docs/providers.md).
func TestGoogleCorpusCoversEachShape(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "corpus", "google.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, shape := range []string{
		"RetryInfo", "PerDayPerProject", "QUOTA_EXHAUSTED", "exhausted your capacity", "limit: 0",
		"The model is overloaded", "MODEL_CAPACITY_EXHAUSTED", `"INTERNAL"`, `"DEADLINE_EXCEEDED"`,
		`"INVALID_ARGUMENT"`, "User location is not supported", "API_KEY_INVALID", `"UNAUTHENTICATED"`,
		`"PERMISSION_DENIED"`, "SERVICE_DISABLED", `"stream": true`,
	} {
		if !strings.Contains(string(raw), shape) {
			t.Errorf("no Google sample shows %s", shape)
		}
	}
}
