package sim

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestQuotaAnnouncedAnthropic(t *testing.T) {
	s, clk := startFake(t, Options{})
	s.SetQuota(keyA, Quota{Requests: 2, Window: time.Minute, Announce: true})
	reset := epoch.Add(time.Minute).Format(time.RFC3339)

	for i, left := range []string{"1", "0"} {
		status, h, _ := post(t, s, "/v1/messages", keyA, messagesBody)
		if status != 200 || h.Get("anthropic-ratelimit-requests-remaining") != left ||
			h.Get("anthropic-ratelimit-requests-limit") != "2" || h.Get("anthropic-ratelimit-requests-reset") != reset {
			t.Fatalf("request %d: %d %v", i, status, h)
		}
	}
	clk.Advance(20 * time.Second)
	status, h, b := post(t, s, "/v1/messages", keyA, messagesBody)
	var e wireError
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if status != 429 || e.Error.Type != "rate_limit_error" || h.Get("retry-after") != "40" ||
		h.Get("anthropic-ratelimit-requests-reset") != reset || h.Get("anthropic-ratelimit-requests-remaining") != "0" {
		t.Errorf("over budget: %d %v %s", status, h, b)
	}
	// Other credentials have their own budget.
	if status, _, _ := post(t, s, "/v1/messages", keyB, messagesBody); status != 200 {
		t.Errorf("other credential: %d", status)
	}
	clk.Advance(39 * time.Second)
	if status, _, _ := post(t, s, "/v1/messages", keyA, messagesBody); status != 429 {
		t.Errorf("a second before the reset: %d", status)
	}
	clk.Advance(time.Second)
	status, h, _ = post(t, s, "/v1/messages", keyA, messagesBody)
	if status != 200 || h.Get("anthropic-ratelimit-requests-remaining") != "1" ||
		h.Get("anthropic-ratelimit-requests-reset") != epoch.Add(2*time.Minute).Format(time.RFC3339) {
		t.Errorf("after the window: %d %v", status, h)
	}
}

func TestQuotaBare(t *testing.T) {
	for _, path := range []string{"/v1/messages", "/v1/chat/completions", "/backend-api/codex/responses"} {
		t.Run(path, func(t *testing.T) {
			s, clk := startFake(t, Options{})
			cred := keyO
			if providerOf(path) == Anthropic {
				cred = keyA
			}
			s.SetQuota(cred, Quota{Requests: 1, Window: time.Hour})
			body := map[string]string{"/v1/messages": messagesBody, "/v1/chat/completions": chatBody, "/backend-api/codex/responses": codexBody}[path]
			if body == "" {
				body = responseBody
			}
			post(t, s, path, cred, body)
			status, h, b := post(t, s, path, cred, body)
			var e wireError
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			if status != 429 || e.Error.Type == "" || e.Error.ResetsAt != nil || e.Error.ResetsInSeconds != nil {
				t.Errorf("%d %s", status, b)
			}
			for _, k := range []string{"retry-after", "retry-after-ms", "anthropic-ratelimit-requests-reset",
				"x-ratelimit-reset-requests", "x-codex-primary-reset-after-seconds"} {
				if h.Get(k) != "" {
					t.Errorf("a bare 429 carries %s: %q", k, h.Get(k))
				}
			}
			clk.Advance(time.Hour)
			if status, _, _ := post(t, s, path, cred, body); status != 200 {
				t.Errorf("after the window: %d", status)
			}
		})
	}
}

func TestQuotaAnnouncedOpenAI(t *testing.T) {
	s, clk := startFake(t, Options{})
	s.SetQuota(keyO, Quota{Requests: 1, Window: 90 * time.Second, Announce: true})
	status, h, _ := post(t, s, "/v1/chat/completions", keyO, chatBody)
	if status != 200 || h.Get("x-ratelimit-limit-requests") != "1" || h.Get("x-ratelimit-remaining-requests") != "0" ||
		h.Get("x-ratelimit-reset-requests") != "1m30s" {
		t.Fatalf("%d %v", status, h)
	}
	clk.Advance(30 * time.Second)
	status, h, b := post(t, s, "/v1/chat/completions", keyO, chatBody)
	var e wireError
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if status != 429 || e.Error.Code == nil || *e.Error.Code != "rate_limit_exceeded" ||
		h.Get("retry-after") != "60" || h.Get("retry-after-ms") != "60000" || h.Get("x-ratelimit-reset-requests") != "1m0s" {
		t.Errorf("%d %v %s", status, h, b)
	}
}

// On the ChatGPT backend an exhausted plan is usage_limit_reached with the
// reset in the body.
func TestQuotaAnnouncedCodex(t *testing.T) {
	s, clk := startFake(t, Options{})
	s.SetQuota(keyO, Quota{Requests: 1, Window: 5 * time.Hour, Announce: true})
	post(t, s, "/backend-api/codex/responses", keyO, responseBody)
	clk.Advance(time.Hour)
	status, h, b := post(t, s, "/backend-api/codex/responses", keyO, responseBody)
	var e wireError
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	reset := epoch.Add(5 * time.Hour)
	if status != 429 || e.Error.Type != "usage_limit_reached" ||
		e.Error.ResetsAt == nil || *e.Error.ResetsAt != reset.Unix() ||
		e.Error.ResetsInSeconds == nil || *e.Error.ResetsInSeconds != 4*3600 ||
		h.Get("x-codex-primary-reset-at") != strconv.FormatInt(reset.Unix(), 10) {
		t.Errorf("%d %v %s", status, h, b)
	}
}

func TestQuotaTokens(t *testing.T) {
	s, clk := startFake(t, Options{})
	// One request costs its body/4 plus 8 output tokens: two fit, not three.
	cost := tokens(len(messagesBody)) + tokens(len("hello ")*5)
	s.SetQuota(keyA, Quota{Tokens: 2*cost + 1, Announce: true})
	for range 2 {
		if status, _, _ := post(t, s, "/v1/messages", keyA, messagesBody); status != 200 {
			t.Fatalf("within the token budget: %d", status)
		}
	}
	status, h, _ := post(t, s, "/v1/messages", keyA, messagesBody)
	if status != 429 || h.Get("anthropic-ratelimit-tokens-remaining") != "0" ||
		h.Get("anthropic-ratelimit-tokens-reset") != epoch.Add(time.Minute).Format(time.RFC3339) || h.Get("retry-after") != "60" {
		t.Errorf("%d %v", status, h)
	}
	clk.Advance(time.Minute)
	if status, _, _ := post(t, s, "/v1/messages", keyA, messagesBody); status != 200 {
		t.Errorf("after the window: %d", status)
	}
}

// Scripted failures do not spend the budget, and the zero Quota lifts it.
func TestQuotaChargesOnlySuccesses(t *testing.T) {
	s, _ := startFake(t, Options{})
	s.SetQuota(keyA, Quota{Requests: 1})
	s.Script(keyA, Overloaded(), Overloaded())
	got := statuses(t, s, "/v1/messages", keyA, keyA, keyA, keyA)
	if want := []int{529, 529, 200, 429}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	s.SetQuota(keyA, Quota{})
	if got := statuses(t, s, "/v1/messages", keyA); got[0] != 200 {
		t.Errorf("after lifting the quota: %v", got)
	}
}

func TestUtilizationHeaders(t *testing.T) {
	s, clk := startFake(t, Options{})
	s.SetUtilization(keyA, 0.25, 0.75)
	s.SetUtilization(keyO, 0.42, 0.1)
	fiveH := strconv.FormatInt(epoch.Add(5*time.Hour).Unix(), 10)
	sevenD := strconv.FormatInt(epoch.Add(7*24*time.Hour).Unix(), 10)
	clk.Advance(time.Hour)

	_, h, _ := post(t, s, "/v1/messages", keyA, messagesBody)
	for k, v := range map[string]string{
		"anthropic-ratelimit-unified-status":               "allowed",
		"anthropic-ratelimit-unified-5h-utilization":       "0.25",
		"anthropic-ratelimit-unified-5h-reset":             fiveH,
		"anthropic-ratelimit-unified-7d-utilization":       "0.75",
		"anthropic-ratelimit-unified-7d-reset":             sevenD,
		"anthropic-ratelimit-unified-representative-claim": "seven_day",
		"anthropic-ratelimit-unified-reset":                sevenD,
	} {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}

	for _, path := range []string{"/v1/responses", "/backend-api/codex/responses"} {
		_, h, _ := post(t, s, path, keyO, responseBody)
		for k, v := range map[string]string{
			"x-codex-primary-used-percent":          "42",
			"x-codex-primary-window-minutes":        "300",
			"x-codex-primary-reset-after-seconds":   strconv.Itoa(4 * 3600),
			"x-codex-primary-reset-at":              fiveH,
			"x-codex-secondary-used-percent":        "10",
			"x-codex-secondary-window-minutes":      "10080",
			"x-codex-secondary-reset-after-seconds": strconv.Itoa(7*24*3600 - 3600),
		} {
			if h.Get(k) != v {
				t.Errorf("%s %s = %q, want %q", path, k, h.Get(k), v)
			}
		}
	}

	// Errors carry it too: a client tells a model-scoped 429 from an
	// exhausted account by these headers.
	s.Script(keyA, RateLimited("anthropic", 0))
	if status, h, _ := post(t, s, "/v1/messages", keyA, messagesBody); status != 429 || h.Get("anthropic-ratelimit-unified-5h-utilization") != "0.25" {
		t.Errorf("429 without utilization: %d %v", status, h)
	}

	// Once the five-hour window passes it starts over, empty.
	clk.Advance(4 * time.Hour)
	_, h, _ = post(t, s, "/v1/messages", keyA, messagesBody)
	if h.Get("anthropic-ratelimit-unified-5h-utilization") != "0" ||
		h.Get("anthropic-ratelimit-unified-5h-reset") != strconv.FormatInt(epoch.Add(10*time.Hour).Unix(), 10) ||
		h.Get("anthropic-ratelimit-unified-7d-utilization") != "0.75" {
		t.Errorf("after the 5h reset: %v", h)
	}

	s.SetUtilization(keyA, -1, -1)
	if _, h, _ := post(t, s, "/v1/messages", keyA, messagesBody); h.Get("anthropic-ratelimit-unified-status") != "" {
		t.Errorf("still reporting after SetUtilization(-1, -1): %v", h)
	}
}
