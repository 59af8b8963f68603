package classify

import (
	"testing"
	"time"
)

func TestParseUtilizationAnthropic(t *testing.T) {
	// Headers of a 200 from claude-relay-service#1260.
	now := time.Unix(1788580000, 0).UTC()
	h := hdr(
		"anthropic-ratelimit-unified-status", "allowed",
		"anthropic-ratelimit-unified-5h-status", "allowed",
		"anthropic-ratelimit-unified-5h-reset", "1788586800",
		"anthropic-ratelimit-unified-5h-utilization", "0.11",
		"anthropic-ratelimit-unified-7d-status", "allowed",
		"anthropic-ratelimit-unified-7d-reset", "1788937200",
		"anthropic-ratelimit-unified-7d-utilization", "0.02",
		"anthropic-ratelimit-unified-7d_oi-utilization", "0.9",
		"anthropic-ratelimit-unified-representative-claim", "five_hour",
	)
	u, ok := ParseUtilization(h, now)
	if !ok {
		t.Fatal("no utilization")
	}
	if u.Status != "allowed" || !u.UpdatedAt.Equal(now) {
		t.Errorf("status/updated: %+v", u)
	}
	if u.FiveHour == nil || u.FiveHour.Used != 0.11 || u.FiveHour.ResetsAt == nil || u.FiveHour.ResetsAt.Unix() != 1788586800 {
		t.Errorf("five hour: %+v", u.FiveHour)
	}
	if u.SevenDay == nil || u.SevenDay.Used != 0.02 || u.SevenDay.ResetsAt.Unix() != 1788937200 {
		t.Errorf("seven day: %+v", u.SevenDay)
	}
	if got := u.Headroom(); got < 0.889 || got > 0.891 {
		t.Errorf("headroom %v", got)
	}
}

func TestParseUtilizationCodex(t *testing.T) {
	// Headers of the 429 in pi#4172.
	now := time.Unix(1777922696, 0).UTC()
	h := hdr(
		"X-Codex-Primary-Used-Percent", "100",
		"X-Codex-Secondary-Used-Percent", "80",
		"X-Codex-Primary-Reset-After-Seconds", "13873",
		"X-Codex-Secondary-Reset-After-Seconds", "316705",
		"X-Codex-Primary-Reset-At", "1777936568",
		"X-Codex-Secondary-Reset-At", "",
	)
	u, ok := ParseUtilization(h, now)
	if !ok {
		t.Fatal("no utilization")
	}
	if u.FiveHour == nil || u.FiveHour.Used != 1 || u.FiveHour.ResetsAt.Unix() != 1777936568 {
		t.Errorf("primary: %+v", u.FiveHour)
	}
	// No reset-at: reset-after-seconds counts from now.
	if u.SevenDay == nil || u.SevenDay.Used != 0.8 || u.SevenDay.ResetsAt.Unix() != 1777922696+316705 {
		t.Errorf("secondary: %+v", u.SevenDay)
	}
	if u.Headroom() != 0 {
		t.Errorf("headroom %v", u.Headroom())
	}
}

func TestParseUtilizationGarbage(t *testing.T) {
	now := time.Unix(1788580000, 0)
	cases := []struct {
		name string
		kv   []string
		ok   bool
	}{
		{"no headers", nil, false},
		{"unrelated headers", []string{"Content-Type", "application/json", "X-Ratelimit-Remaining-Tokens", "5"}, false},
		{"NaN", []string{"Anthropic-Ratelimit-Unified-5h-Utilization", "NaN"}, false},
		{"negative", []string{"Anthropic-Ratelimit-Unified-5h-Utilization", "-0.5"}, false},
		{"absurd", []string{"X-Codex-Primary-Used-Percent", "5000"}, false},
		{"status only", []string{"Anthropic-Ratelimit-Unified-Status", "rejected"}, true},
		{"status not a word", []string{"Anthropic-Ratelimit-Unified-Status", "<script>"}, false},
	}
	for _, c := range cases {
		u, ok := ParseUtilization(hdr(c.kv...), now)
		if ok != c.ok || (ok && u == nil) {
			t.Errorf("%s: got %+v %v", c.name, u, ok)
		}
	}
	// A bad reset leaves the window without one; the use still counts.
	u, ok := ParseUtilization(hdr(
		"Anthropic-Ratelimit-Unified-5h-Utilization", "0.5",
		"Anthropic-Ratelimit-Unified-5h-Reset", "99999999999999"), now)
	if !ok || u.FiveHour == nil || u.FiveHour.Used != 0.5 || u.FiveHour.ResetsAt != nil {
		t.Errorf("bad reset: %+v", u)
	}
}

// With both families present, a usable unified window wins and an
// unusable one yields to the Codex window, whatever order the header map
// hands them over in (it changes from one range to the next).
func TestParseUtilizationBothFamilies(t *testing.T) {
	now := time.Unix(1788580000, 0).UTC()
	for _, c := range []struct {
		unified5h string
		want      float64
	}{{"0.25", 0.25}, {"garbage", 0.4}} {
		h := hdr(
			"Anthropic-Ratelimit-Unified-5h-Utilization", c.unified5h,
			"X-Codex-Primary-Used-Percent", "40",
			"X-Codex-Secondary-Used-Percent", "10",
			"Anthropic-Ratelimit-Unified-7d-Utilization", "nan",
		)
		for range 64 {
			u, ok := ParseUtilization(h, now)
			if !ok || u.FiveHour == nil || u.FiveHour.Used != c.want || u.SevenDay == nil || u.SevenDay.Used != 0.1 {
				t.Fatalf("unified 5h %q: %+v", c.unified5h, u)
			}
		}
	}
}
