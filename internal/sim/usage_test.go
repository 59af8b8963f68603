package sim

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/classify"
)

func getUsage(t *testing.T, s *Server, path, cred string, hdr ...string) (int, []byte) {
	t.Helper()
	resp := call(t, guard(t), s, http.MethodGet, path, cred, "", hdr...)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// The usage endpoints answer what the headers report, in the shapes the
// real readers read, and move with the windows.
func TestUsageEndpoints(t *testing.T) {
	s, clk := startFake(t, Options{})
	s.SetUtilization("tok", 0.5, 0.2)
	clk.Advance(time.Hour)

	if code, _ := getUsage(t, s, "/api/oauth/usage", "tok"); code != http.StatusNotFound {
		t.Fatalf("Claude usage without the beta header: %d", code)
	}
	code, body := getUsage(t, s, "/api/oauth/usage", "tok", "Authorization", "Bearer tok", "anthropic-beta", "oauth-2025-04-20")
	if code != http.StatusOK {
		t.Fatalf("Claude usage: %d %s", code, body)
	}
	q, err := classify.ReadClaudeUsage(body, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Windows) != 2 || q.Windows[0].Name != "5h" || q.Windows[0].Used != 0.5 || !q.Windows[0].ResetsAt.Equal(epoch.Add(5*time.Hour)) ||
		q.Windows[1].Name != "7d" || q.Windows[1].Used != 0.2 {
		t.Fatalf("Claude windows %+v", q.Windows)
	}

	code, body = getUsage(t, s, "/backend-api/wham/usage", "tok")
	if code != http.StatusOK {
		t.Fatalf("ChatGPT usage: %d %s", code, body)
	}
	q, err = classify.ReadCodexUsage(body, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if q.Plan != "plus" || len(q.Windows) != 2 || q.Windows[0].Name != "5h" || q.Windows[0].Used != 0.5 || q.Windows[1].Name != "7d" ||
		!q.Windows[1].ResetsAt.Equal(epoch.Add(sevenDays)) {
		t.Fatalf("ChatGPT quota %+v", q)
	}

	// The 5h window resets: both report it empty.
	clk.Advance(4 * time.Hour)
	_, body = getUsage(t, s, "/backend-api/wham/usage", "tok")
	if q, _ = classify.ReadCodexUsage(body, clk.Now()); q.Windows[0].Used != 0 || !q.Windows[0].ResetsAt.Equal(epoch.Add(10*time.Hour)) {
		t.Fatalf("after the reset %+v", q.Windows[0])
	}
	if n := len(s.Requests()); n != 4 {
		t.Fatalf("%d records, want 4", n)
	}
}

// A full window reports rejected; a per-model week and extra usage show
// in the headers and in the usage answer.
func TestUsageExtras(t *testing.T) {
	s, clk := startFake(t, Options{})
	s.SetUtilization("tok", 1.0, 0.4)
	s.SetUsageExtras("tok", UsageExtras{ModelWeekly: 1, ExtraUsage: true})
	_, h, _ := post(t, s, "/v1/messages", "tok", `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	q, ok := classify.ReadWindows(h, clk.Now())
	if !ok {
		t.Fatal("no windows")
	}
	byName := map[string]classify.Window{}
	for _, w := range q.Windows {
		byName[w.Name] = w
	}
	if w := byName["5h"]; w.Status != "rejected" {
		t.Fatalf("5h %+v", w)
	}
	if w := byName["7d_sonnet"]; w.Status != "rejected" || w.Model != "sonnet" {
		t.Fatalf("7d_sonnet %+v", w)
	}
	if q.ExtraUsage == nil || !q.ExtraUsage.InUse || q.Status != "allowed" {
		t.Fatalf("extra usage %+v status %q", q.ExtraUsage, q.Status)
	}

	_, body := getUsage(t, s, "/backend-api/wham/usage", "tok")
	cq, _ := classify.ReadCodexUsage(body, clk.Now())
	var spark *classify.Window
	for i, w := range cq.Windows {
		if w.Model != "" {
			spark = &cq.Windows[i]
		}
	}
	if spark == nil || spark.Name != "7d_gpt-5.3-codex-spark" || spark.Status != "rejected" || cq.Windows[0].Status != "rejected" {
		t.Fatalf("ChatGPT windows %+v", cq.Windows)
	}
}

// Script steps apply to the usage routes, so a poller's refusals can be
// played.
func TestUsageEndpointScripted(t *testing.T) {
	s, _ := startFake(t, Options{})
	s.ScriptUsage("tok", Step{Status: http.StatusTooManyRequests}, Step{Status: 403, Body: `{"type":"error","error":{"type":"permission_error","message":"OAuth token does not meet scope requirement user:profile"}}`})
	if code, _ := getUsage(t, s, "/api/oauth/usage", "tok", "anthropic-beta", "oauth-2025-04-20"); code != http.StatusTooManyRequests {
		t.Fatalf("scripted 429: %d", code)
	}
	if code, _ := getUsage(t, s, "/api/oauth/usage", "tok", "anthropic-beta", "oauth-2025-04-20"); code != http.StatusForbidden {
		t.Fatalf("scripted 403: %d", code)
	}
	if code, _ := getUsage(t, s, "/api/oauth/usage", "tok", "anthropic-beta", "oauth-2025-04-20"); code != http.StatusOK {
		t.Fatalf("after the script: %d", code)
	}
}

// A usage poll spends none of the credential's Quota.
func TestUsageEndpointSpendsNoQuota(t *testing.T) {
	s, _ := startFake(t, Options{})
	s.SetQuota("tok", Quota{Requests: 1, Window: time.Hour})
	for range 3 {
		if code, _ := getUsage(t, s, "/backend-api/wham/usage", "tok"); code != http.StatusOK {
			t.Fatalf("usage poll: %d", code)
		}
	}
	if code, _, _ := post(t, s, "/v1/messages", "tok", `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`); code != http.StatusOK {
		t.Fatalf("the one request of the window: %d", code)
	}
}

// A poll neither takes a step scripted for the model routes nor grows the
// windows SetWindows moves with each answer.
func TestUsagePollTakesNoRequestStep(t *testing.T) {
	s, clk := startFake(t, Options{})
	s.Script("tok", RateLimited("anthropic", 0))
	s.SetWindows("tok", Windows{FiveHour: 0.5, SevenDay: 0.1, PerFiveHour: 0.1})
	for range 2 {
		if code, _ := getUsage(t, s, "/api/oauth/usage", "tok", "anthropic-beta", "oauth-2025-04-20"); code != http.StatusOK {
			t.Fatalf("poll: %d", code)
		}
	}
	_, body := getUsage(t, s, "/api/oauth/usage", "tok", "anthropic-beta", "oauth-2025-04-20")
	if q, _ := classify.ReadClaudeUsage(body, clk.Now()); q.Windows[0].Used != 0.5 {
		t.Fatalf("polls grew the 5h window: %+v", q.Windows[0])
	}
	if code, _, _ := post(t, s, "/v1/messages", "tok", `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`); code != http.StatusTooManyRequests {
		t.Fatalf("the scripted 429 was taken by a poll: %d", code)
	}
}
