package sim

import (
	"strconv"
	"testing"
	"time"
)

func TestWindowsFillWithUseAndStartOverAtTheirReset(t *testing.T) {
	s, clk := startFake(t, Options{})
	s.SetWindows(keyA, Windows{FiveHour: 0.5, SevenDay: 0.2, FiveHourReset: 2 * time.Minute, PerFiveHour: 0.1, PerSevenDay: 0.01})
	fiveH := strconv.FormatInt(epoch.Add(2*time.Minute).Unix(), 10)
	sevenD := strconv.FormatInt(epoch.Add(7*24*time.Hour).Unix(), 10)

	// Each answer reports itself.
	for _, want := range []struct{ five, seven string }{{"0.6", "0.21"}, {"0.7", "0.22"}, {"0.8", "0.23"}} {
		_, h, _ := post(t, s, "/v1/messages", keyA, messagesBody)
		if h.Get("anthropic-ratelimit-unified-5h-utilization") != want.five || h.Get("anthropic-ratelimit-unified-7d-utilization") != want.seven ||
			h.Get("anthropic-ratelimit-unified-5h-reset") != fiveH || h.Get("anthropic-ratelimit-unified-7d-reset") != sevenD {
			t.Fatalf("want 5h %s 7d %s, got %v", want.five, want.seven, h)
		}
	}
	// A refused request costs nothing.
	s.Script(keyA, RateLimited(Anthropic, 0))
	if status, _, _ := post(t, s, "/v1/messages", keyA, messagesBody); status != 429 {
		t.Fatalf("scripted 429: %d", status)
	}
	if _, h, _ := post(t, s, "/v1/messages", keyA, messagesBody); h.Get("anthropic-ratelimit-unified-5h-utilization") != "0.9" {
		t.Fatalf("after the 429: %v", h)
	}
	// Never more than all of it.
	post(t, s, "/v1/messages", keyA, messagesBody)
	if _, h, _ := post(t, s, "/v1/messages", keyA, messagesBody); h.Get("anthropic-ratelimit-unified-5h-utilization") != "1" {
		t.Fatalf("after five more answers: %v", h)
	}
	// The reset: the window starts over, the next one is five hours on.
	clk.Advance(2 * time.Minute)
	_, h, _ := post(t, s, "/v1/messages", keyA, messagesBody)
	if h.Get("anthropic-ratelimit-unified-5h-utilization") != "0.1" ||
		h.Get("anthropic-ratelimit-unified-5h-reset") != strconv.FormatInt(epoch.Add(2*time.Minute+5*time.Hour).Unix(), 10) {
		t.Errorf("after the reset: %v", h)
	}
}

func TestWindowsFillOnCodexToo(t *testing.T) {
	s, _ := startFake(t, Options{})
	s.SetWindows(keyO, Windows{FiveHour: 0.3, SevenDay: 0.1, PerFiveHour: 0.05})
	for _, want := range []string{"35", "40"} {
		_, h, _ := post(t, s, "/backend-api/codex/responses", keyO, codexBody)
		if h.Get("x-codex-primary-used-percent") != want || h.Get("x-codex-secondary-used-percent") != "10" ||
			h.Get("x-codex-primary-window-minutes") != "300" {
			t.Fatalf("want %s%%: %v", want, h)
		}
	}
	// SetUtilization stops the growth.
	s.SetUtilization(keyO, 0.5, 0.1)
	for range 2 {
		if _, h, _ := post(t, s, "/backend-api/codex/responses", keyO, codexBody); h.Get("x-codex-primary-used-percent") != "50" {
			t.Fatalf("after SetUtilization: %v", h)
		}
	}
}
