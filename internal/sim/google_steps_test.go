package sim

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// googleRoute is one of the four ways a model call reaches Google.
type googleRoute struct {
	name, path, cred string
	assist, stream   bool
}

func googleRoutes() []googleRoute {
	return []googleRoute{
		{"gemini", geminiPath, geminiKey, false, false},
		{"gemini sse", geminiStreamPath, geminiKey, false, true},
		{"code assist", assistPath, loginToken, true, false},
		{"code assist sse", assistStreamPath, loginToken, true, true},
	}
}

func (r googleRoute) body(project string) string {
	if r.assist {
		return assistBody(project, "gemini-2.5-flash", geminiBodyHi)
	}
	return geminiBodyHi
}

// googleStepCases are the rows of TestGoogleCannedSteps.
func googleStepCases() []googleStepCase {
	return append([]googleStepCase{
		{
			"rate limited 30s", RateLimited("google", 30*time.Second), fixed(429),
			func(t *testing.T, r googleRoute, e googleStatusBody, served time.Time) {
				if e.Error.Status != "RESOURCE_EXHAUSTED" || e.retryDelay() != "30s" {
					t.Errorf("%+v", e.Error)
				}
				if !r.assist {
					if id := e.quotaID(t); !strings.Contains(id, "PerMinute") || !strings.Contains(e.Error.Message, "Please retry in 30s.") ||
						!strings.Contains(e.Error.Message, "model: gemini-2.5-pro") || e.detail("Help") == nil {
						t.Errorf("gemini per-minute %s: %s", id, e.Error.Message)
					}
					if strings.Contains(e.Error.Message, "limit: 0") {
						t.Error(`"limit: 0" makes Gemini CLI call the quota terminal`)
					}
					return
				}
				reason, domain, md := e.errorInfo(t)
				if reason != "RATE_LIMIT_EXCEEDED" || domain != "cloudcode-pa.googleapis.com" || md["model"] != "gemini-2.5-flash" ||
					md["quotaResetTimeStamp"] != served.Add(30*time.Second).UTC().Format(time.RFC3339) || md["quotaResetDelay"] != "30s" ||
					e.Error.Message != "You have exhausted your capacity on this model. Your quota will reset after 30s." {
					t.Errorf("code assist %s %v: %s", reason, md, e.Error.Message)
				}
			},
		},
		{
			"rate limited, no time", RateLimited("gemini", 0), fixed(429),
			func(t *testing.T, r googleRoute, e googleStatusBody, _ time.Time) {
				if e.retryDelay() != "" || strings.Contains(e.Error.Message, "retry in") {
					t.Errorf("a time in %+v", e.Error)
				}
				if !r.assist {
					if id := e.quotaID(t); !strings.Contains(id, "PerMinute") {
						t.Errorf("quotaId %s", id)
					}
					return
				}
				method := map[bool]string{true: "StreamGenerateContent", false: "GenerateContent"}[r.stream]
				if !strings.Contains(e.Error.Message, "'"+method+" Requests per minute per user per tier'") || len(e.Error.Details) != 0 {
					t.Errorf("per-minute %q", e.Error.Message)
				}
			},
		},
		{
			"daily limit", GoogleDailyLimit(0), fixed(429),
			func(t *testing.T, r googleRoute, e googleStatusBody, served time.Time) {
				if !r.assist {
					// Google's short RetryInfo on a daily quota: the
					// seconds left in the minute, 39.5 at 12:00:20.5.
					if id := e.quotaID(t); !strings.Contains(id, "PerDay") || e.retryDelay() != "40s" || !strings.Contains(e.Error.Message, "Please retry in 39.5s.") {
						t.Errorf("gemini per-day %s %q %s", id, e.retryDelay(), e.Error.Message)
					}
					return
				}
				reason, _, md := e.errorInfo(t)
				if reason != "QUOTA_EXHAUSTED" || md["quotaResetTimeStamp"] != served.Add(24*time.Hour).UTC().Format(time.RFC3339) ||
					!strings.Contains(e.Error.Message, "reset after 24h0m0s.") || e.retryDelay() != "86400s" {
					t.Errorf("code assist daily %s %v %s", reason, md, e.Error.Message)
				}
			},
		},
	}, googleLaterStepCases()...)
}

// googleLaterStepCases are TestGoogleCannedSteps' rows from capacity on.
func googleLaterStepCases() []googleStepCase {
	return []googleStepCase{
		{
			"capacity exhausted", GoogleCapacityExhausted(8*time.Hour + 44*time.Minute + 7*time.Second + 300*time.Millisecond), fixed(429),
			func(t *testing.T, r googleRoute, e googleStatusBody, served time.Time) {
				reason, domain, md := e.errorInfo(t)
				if reason != "QUOTA_EXHAUSTED" || domain != "cloudcode-pa.googleapis.com" || md["quotaResetDelay"] != "8h44m7.3s" || md["uiMessage"] != "true" ||
					e.Error.Message != "You have exhausted your capacity on this model. Your quota will reset after 8h44m7s." ||
					md["quotaResetTimeStamp"] != served.Add(8*time.Hour+44*time.Minute+8*time.Second).UTC().Format(time.RFC3339) || e.retryDelay() != "31447.3s" {
					t.Errorf("%s %v %q %s", reason, md, e.retryDelay(), e.Error.Message)
				}
			},
		},
		{
			"no capacity", GoogleNoCapacity(), fixed(429),
			func(t *testing.T, r googleRoute, e googleStatusBody, _ time.Time) {
				reason, _, md := e.errorInfo(t)
				model := map[bool]string{true: "gemini-2.5-flash", false: "gemini-2.5-pro"}[r.assist]
				if reason != "MODEL_CAPACITY_EXHAUSTED" || md["model"] != model || e.Error.Message != "No capacity available for model "+model+" on the server" {
					t.Errorf("%s %v %s", reason, md, e.Error.Message)
				}
			},
		},
		{
			"overloaded", GoogleOverloaded(), fixed(503),
			func(t *testing.T, _ googleRoute, e googleStatusBody, _ time.Time) {
				if e.Error.Status != "UNAVAILABLE" || e.Error.Message != "The model is overloaded. Please try again later." {
					t.Errorf("%+v", e.Error)
				}
			},
		},
		{
			"server error", ServerError(500), fixed(500),
			func(t *testing.T, r googleRoute, e googleStatusBody, _ time.Time) {
				want := map[bool]string{true: "Internal error encountered.", false: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"}[r.assist]
				if e.Error.Status != "INTERNAL" || e.Error.Message != want {
					t.Errorf("%+v", e.Error)
				}
			},
		},
		{
			"unauthorized", Unauthorized("google"), func(r googleRoute) int { return map[bool]int{true: 401, false: 400}[r.assist] },
			func(t *testing.T, r googleRoute, e googleStatusBody, _ time.Time) {
				reason, _, _ := e.errorInfo(t)
				if r.assist && (e.Error.Status != "UNAUTHENTICATED" || reason != "ACCESS_TOKEN_TYPE_UNSUPPORTED") ||
					!r.assist && (e.Error.Status != "INVALID_ARGUMENT" || reason != "API_KEY_INVALID") {
					t.Errorf("%s %+v", reason, e.Error)
				}
			},
		},
		{
			"token expired", TokenExpired("google"), fixed(401),
			func(t *testing.T, r googleRoute, e googleStatusBody, _ time.Time) {
				reason, _, md := e.errorInfo(t)
				method := "GenerateContent"
				if r.stream {
					method = "StreamGenerateContent"
				}
				if reason != "ACCESS_TOKEN_EXPIRED" || !strings.HasSuffix(md["method"].(string), "."+method) ||
					r.assist != (md["service"] == "cloudcode-pa.googleapis.com") {
					t.Errorf("%s %v", reason, md)
				}
			},
		},
		{
			"permission denied", GooglePermissionDenied(), fixed(403),
			func(t *testing.T, r googleRoute, e googleStatusBody, _ time.Time) {
				if e.Error.Status != "PERMISSION_DENIED" {
					t.Errorf("%+v", e.Error)
				}
				if r.assist {
					if reason, _, md := e.errorInfo(t); reason != "IAM_PERMISSION_DENIED" || !strings.HasPrefix(md["resource"].(string), "projects/sim-project-") {
						t.Errorf("%s %v", reason, md)
					}
				}
			},
		},
	}
}

type googleStepCase struct {
	name   string
	step   Step
	status func(r googleRoute) int
	check  func(t *testing.T, r googleRoute, e googleStatusBody, served time.Time)
}

// The canned Google steps, each on each route: the status and the fields
// a classifier reads, in the route's shape, times computed when served.
func TestGoogleCannedSteps(t *testing.T) {
	for _, tc := range googleStepCases() {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := startFake(t, Options{})
			s.AddGoogleKey(geminiKey)
			project := s.AddGoogleLogin(loginToken, GoogleLogin{})
			clk.Advance(20*time.Second + 500*time.Millisecond)
			for _, r := range googleRoutes() {
				t.Run(r.name, func(t *testing.T) {
					s.Script(r.cred, tc.step)
					status, hdr, body := gcall(t, s, "POST", r.path, r.cred, r.body(project))
					if want := tc.status(r); status != want {
						t.Fatalf("status %d, want %d: %s", status, want, body)
					}
					if ct := hdr.Get("Content-Type"); ct != "application/json; charset=UTF-8" {
						t.Errorf("content-type %q", ct)
					}
					if array := body[0] == '['; array != (r.assist && r.stream) {
						t.Errorf("array form %v: %s", array, body)
					}
					if bytes.Contains(body, []byte("{{")) {
						t.Errorf("placeholder left: %s", body)
					}
					e := googleError(t, body)
					if e.Error.Code != status || (len(e.Error.Errors) == 1) != r.assist {
						t.Errorf("code %d, legacy errors %+v", e.Error.Code, e.Error.Errors)
					}
					tc.check(t, r, e, clk.Now())
					if recs := s.Requests(); recs[len(recs)-1].Status != status {
						t.Errorf("recorded %d", recs[len(recs)-1].Status)
					}
				})
			}
		})
	}
}

func fixed(status int) func(googleRoute) int { return func(googleRoute) int { return status } }

// An error inside a 200 stream: the first and only event, or after some
// text; framed as Google frames every event.
func TestGoogleStreamError(t *testing.T) {
	s, project := googleStart(t, Options{Chunks: 4}, GoogleLogin{})
	for _, r := range googleRoutes() {
		if !r.stream {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			s.Script(r.cred, StreamOverloaded("google"))
			resp, err := googleDo(guard(t), s, "POST", r.path, r.cred, r.body(project))
			if err != nil {
				t.Fatal(err)
			}
			evs := events(t, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || len(evs) != 1 || evs[0].Name != "" {
				t.Fatalf("%d %+v", resp.StatusCode, evs)
			}
			if e := googleError(t, evs[0].Data); e.Error.Code != 503 || e.Error.Status != "UNAVAILABLE" {
				t.Errorf("event %s", evs[0].Data)
			}

			st := StreamOverloaded("gemini")
			st.ErrorAfter = 2
			s.Script(r.cred, st)
			resp, err = googleDo(guard(t), s, "POST", r.path, r.cred, r.body(project))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			evs = events(t, resp.Body)
			if len(evs) != 3 {
				t.Fatalf("%d events, want 2 deltas and the error", len(evs))
			}
			text := "candidates.0.content.parts.0.text"
			if r.assist {
				text = "response." + text
			}
			if str(t, decode(t, evs[1].Data), text) != "hello " || googleError(t, evs[2].Data).Error.Code != 503 {
				t.Errorf("events %s | %s", evs[1].Data, evs[2].Data)
			}
		})
	}
}

// SetQuota on a Google credential refuses in Google's shape, the reset
// computed on the clock: per minute, per day, announced or not.
func TestGoogleQuotaRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		quota Quota
		check func(t *testing.T, r googleRoute, e googleStatusBody)
	}{
		{"per minute, announced", Quota{Requests: 1, Announce: true}, func(t *testing.T, r googleRoute, e googleStatusBody) {
			if e.retryDelay() != "40s" {
				t.Errorf("retryDelay %q, want the 40 s left in the window", e.retryDelay())
			}
			if r.assist {
				if reason, _, md := e.errorInfo(t); reason != "RATE_LIMIT_EXCEEDED" || md["quotaResetTimeStamp"] != epoch.Add(time.Minute).Format(time.RFC3339) {
					t.Errorf("%s %v", reason, md)
				}
				return
			}
			if id := e.quotaID(t); id != quotaPerMinute || !strings.Contains(e.Error.Message, "Please retry in 40s.") || !strings.Contains(e.Error.Message, "limit: 1,") {
				t.Errorf("%s %s", id, e.Error.Message)
			}
		}},
		{"per minute, bare", Quota{Requests: 1}, func(t *testing.T, r googleRoute, e googleStatusBody) {
			if e.retryDelay() != "" || strings.Contains(e.Error.Message, "retry in") || strings.Contains(e.Error.Message, "reset after") {
				t.Errorf("a time in %+v", e.Error)
			}
		}},
		{"tokens", Quota{Tokens: 1, Announce: true}, func(t *testing.T, r googleRoute, e googleStatusBody) {
			if !r.assist && e.quotaID(t) != quotaTokensPerM {
				t.Errorf("quotaId %s", e.quotaID(t))
			}
		}},
		{"per day", Quota{Requests: 1, Window: 24 * time.Hour, Announce: true}, func(t *testing.T, r googleRoute, e googleStatusBody) {
			if r.assist {
				if reason, _, _ := e.errorInfo(t); reason != "QUOTA_EXHAUSTED" || !strings.Contains(e.Error.Message, "reset after 23h59m40s") {
					t.Errorf("%s %s", reason, e.Error.Message)
				}
				return
			}
			if e.quotaID(t) != quotaPerDay {
				t.Errorf("quotaId %s", e.quotaID(t))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range googleRoutes() {
				t.Run(r.name, func(t *testing.T) {
					s, clk := startFake(t, Options{})
					s.AddGoogleKey(geminiKey)
					project := s.AddGoogleLogin(loginToken, GoogleLogin{})
					s.SetQuota(r.cred, tc.quota)
					if tc.quota.Tokens == 0 {
						if status, _, body := gcall(t, s, "POST", r.path, r.cred, r.body(project)); status != 200 {
							t.Fatalf("first: %d %s", status, body)
						}
					}
					clk.Advance(20 * time.Second)
					status, hdr, body := gcall(t, s, "POST", r.path, r.cred, r.body(project))
					if status != 429 || hdr.Get("retry-after") != "" {
						t.Fatalf("%d %v %s", status, hdr, body)
					}
					if array := body[0] == '['; array != (r.assist && r.stream) {
						t.Errorf("array form %v", array)
					}
					tc.check(t, r, googleError(t, body))
				})
			}
		})
	}
}
