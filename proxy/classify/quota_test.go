package classify

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// windowSample is one real answer that reports quota windows, and every
// field subpool must read from it (testdata/windows).
type windowSample struct {
	Name    string            `json:"name"`
	Kind    string            `json:"kind"` // headers, claude_usage, codex_usage, codex_event
	Now     string            `json:"now"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
	Want    struct {
		Status      string `json:"status"`
		Plan        string `json:"plan"`
		ActiveLimit string `json:"active_limit"`
		ExtraUsage  *struct {
			InUse          bool    `json:"in_use"`
			Status         string  `json:"status"`
			DisabledReason string  `json:"disabled_reason"`
			Enabled        *bool   `json:"enabled"`
			Used           float64 `json:"used"`
			ResetsAt       string  `json:"resets_at"`
		} `json:"extra_usage"`
		Credits *Credits `json:"credits"`
		Windows []struct {
			Name     string  `json:"name"`
			Used     float64 `json:"used"`
			ResetsAt string  `json:"resets_at"` // RFC 3339; "" for none
			Binding  bool    `json:"binding"`
			Status   string  `json:"status"`
			Model    string  `json:"model"`
			Length   string  `json:"length"` // a Go duration; "" for unknown
		} `json:"windows"`
	} `json:"want"`
	Source string `json:"source"`
	Note   string `json:"note"`
}

func loadWindowSamples(t testing.TB) []windowSample {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "windows", "windows.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var ss []windowSample
	if err := dec.Decode(&ss); err != nil {
		t.Fatal(err)
	}
	return ss
}

func (s *windowSample) read(t *testing.T, now time.Time) Quota {
	t.Helper()
	switch s.Kind {
	case "headers":
		h := http.Header{}
		for k, v := range s.Headers {
			h.Add(k, v)
		}
		q, ok := ReadWindows(h, now)
		if !ok {
			t.Fatal("ReadWindows found nothing")
		}
		return q
	case "codex_event":
		q, ok := ReadRateLimitEvent("codex.rate_limits", s.Body, now)
		if !ok {
			t.Fatal("ReadRateLimitEvent found nothing")
		}
		return q
	case "claude_usage", "codex_usage":
		read := ReadClaudeUsage
		if s.Kind == "codex_usage" {
			read = ReadCodexUsage
		}
		q, err := read(s.Body, now)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	t.Fatalf("unknown kind %q", s.Kind)
	return Quota{}
}

func TestWindowCorpus(t *testing.T) {
	samples := loadWindowSamples(t)
	if len(samples) < 20 {
		t.Errorf("%d window samples, want at least 20", len(samples))
	}
	for _, s := range samples {
		t.Run(s.Name, func(t *testing.T) {
			if !strings.HasPrefix(s.Source, "https://") && !strings.HasPrefix(s.Source, "constructed") {
				t.Errorf("source must be a public URL or say it was constructed: %q", s.Source)
			}
			now, err := time.Parse(time.RFC3339, s.Now)
			if err != nil {
				t.Fatal(err)
			}
			q := s.read(t, now)
			w := s.Want
			if q.Status != w.Status || q.Plan != w.Plan || q.ActiveLimit != w.ActiveLimit {
				t.Errorf("status %q plan %q active limit %q, want %q %q %q", q.Status, q.Plan, q.ActiveLimit, w.Status, w.Plan, w.ActiveLimit)
			}
			switch {
			case (q.Credits == nil) != (w.Credits == nil):
				t.Errorf("credits %+v, want %+v", q.Credits, w.Credits)
			case q.Credits != nil && *q.Credits != *w.Credits:
				t.Errorf("credits %+v, want %+v", *q.Credits, *w.Credits)
			}
			if (q.ExtraUsage == nil) != (w.ExtraUsage == nil) {
				t.Errorf("extra usage %+v, want %+v", q.ExtraUsage, w.ExtraUsage)
			} else if e, we := q.ExtraUsage, w.ExtraUsage; e != nil {
				if e.InUse != we.InUse || e.Status != we.Status || e.DisabledReason != we.DisabledReason ||
					!sameBool(e.Enabled, we.Enabled) || !near(e.Used, we.Used) || !sameTime(t, e.ResetsAt, we.ResetsAt) {
					t.Errorf("extra usage %+v, want %+v", *e, *we)
				}
			}
			if len(q.Windows) != len(w.Windows) {
				t.Fatalf("%d windows %+v, want %d", len(q.Windows), q.Windows, len(w.Windows))
			}
			for i, g := range q.Windows {
				x := w.Windows[i]
				length := ""
				if g.Length != 0 {
					length = g.Length.String()
				}
				if g.Name != x.Name || !near(g.Used, x.Used) || g.Binding != x.Binding || g.Status != x.Status ||
					g.Model != x.Model || length != x.Length || !sameTime(t, g.ResetsAt, x.ResetsAt) {
					t.Errorf("window %d: got %s used %v resets %v binding %v status %q model %q length %q\nwant %+v",
						i, g.Name, g.Used, g.ResetsAt, g.Binding, g.Status, g.Model, length, x)
				}
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func sameBool(a, b *bool) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func sameTime(t *testing.T, got *time.Time, want string) bool {
	t.Helper()
	if want == "" {
		return got == nil
	}
	w, err := time.Parse(time.RFC3339Nano, want)
	if err != nil {
		t.Fatal(err)
	}
	return got != nil && got.Equal(w)
}

// Values that cannot be read are dropped, never guessed.
func TestWindowsGarbage(t *testing.T) {
	now := time.Unix(1788580000, 0)
	for _, c := range []struct {
		name string
		h    http.Header
	}{
		{"nothing", nil},
		{"unrelated", hdr("Content-Type", "application/json", "Retry-After", "30")},
		{"NaN", hdr("Anthropic-Ratelimit-Unified-5h-Utilization", "NaN")},
		{"past twice full", hdr("X-Codex-Primary-Used-Percent", "250", "X-Codex-Primary-Window-Minutes", "300")},
		{"remaining above limit", hdr("X-Ratelimit-Limit-Requests", "5", "X-Ratelimit-Remaining-Requests", "9")},
		{"no limit", hdr("Anthropic-Ratelimit-Requests-Remaining", "0")},
		{"status not a word", hdr("Anthropic-Ratelimit-Unified-Status", "<b>")},
		{"empty Codex slot", hdr("X-Codex-Secondary-Used-Percent", "0", "X-Codex-Secondary-Window-Minutes", "0")},
	} {
		if q, ok := ReadWindows(c.h, now); ok {
			t.Errorf("%s: read %+v", c.name, q)
		}
	}
	// A bad reset leaves the window without one; its use still counts.
	q, _ := ReadWindows(hdr("Anthropic-Ratelimit-Unified-5h-Utilization", "0.5", "Anthropic-Ratelimit-Unified-5h-Reset", "99999999999999"), now)
	if len(q.Windows) != 1 || q.Windows[0].Used != 0.5 || q.Windows[0].ResetsAt != nil {
		t.Errorf("bad reset: %+v", q.Windows)
	}
	for _, body := range []string{"", "<html>", `[]`, `{"five_hour":`, `{"five_hour":{"utilization":"lots"}}`, `{"rate_limit":null}`} {
		if q, err := ReadClaudeUsage([]byte(body), now); err == nil {
			t.Errorf("claude usage %q: %+v", body, q)
		}
		if q, err := ReadCodexUsage([]byte(body), now); err == nil {
			t.Errorf("codex usage %q: %+v", body, q)
		}
	}
}

// ReadRateLimitEvent may be handed every event of a stream: anything but
// Codex's codex.rate_limits is refused unread, and garbage in the event
// is dropped, never guessed.
func TestReadRateLimitEventOthers(t *testing.T) {
	now := time.Unix(1788580000, 0)
	event := `{"type":"codex.rate_limits","plan_type":"plus","rate_limits":{"primary":{"used_percent":50,"window_minutes":300}}}`
	for _, c := range []struct {
		name, event, data string
	}{
		{"content event", "response.output_text.delta", `{"type":"response.output_text.delta","delta":"codex.rate_limits"}`},
		{"another name on the event's data", "response.created", event},
		{"unnamed content that mentions it", "", `{"type":"response.output_text.delta","delta":"codex.rate_limits"}`},
		{"not JSON", "codex.rate_limits", `codex.rate_limits`},
		{"nothing reported", "codex.rate_limits", `{"type":"codex.rate_limits"}`},
		{"garbage windows", "codex.rate_limits", `{"type":"codex.rate_limits","rate_limits":{"primary":{"used_percent":"lots"},"secondary":{"used_percent":0,"window_minutes":0}}}`},
		{"one credits flag", "codex.rate_limits", `{"type":"codex.rate_limits","credits":{"has_credits":true}}`},
	} {
		if q, ok := ReadRateLimitEvent(c.event, []byte(c.data), now); ok {
			t.Errorf("%s: read %+v", c.name, q)
		}
	}
	// The same event unnamed (a data line alone) is read.
	q, ok := ReadRateLimitEvent("", []byte(event), now)
	if !ok || q.Plan != "plus" || len(q.Windows) != 1 || q.Windows[0].Name != "5h" || q.Windows[0].Used != 0.5 || !q.Windows[0].Binding {
		t.Errorf("unnamed event: %+v %v", q, ok)
	}
}
