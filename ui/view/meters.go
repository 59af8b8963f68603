package view

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Meter is one usage window of a credential.
type Meter struct {
	Name  string  // "5h", "7d", "7d sonnet"
	Value float64 // 0..1
	Level Level
	Text  string // "5h 42%"
	// Resets is "resets in 2h 13m", "reset" once the window has rolled
	// over with no news since, empty when the upstream gave no time.
	Resets string
	// ResetsAt is the reset as a clock time ("14:20", "Tue 09:00"), for
	// the menu line; empty when unknown or past.
	ResetsAt string
	// Binding marks the window that limits the credential now: the panel
	// draws it stronger, and the menu names it.
	Binding bool

	resetsIn time.Duration // how long until the reset; 0 when unknown or past
}

// meters turns a credential's windows into bars, in the upstream's order
// (shortest first), so a bar never jumps when another becomes binding.
func (m *Model) meters(kind string, u *api.Utilization, now time.Time) []Meter {
	ws := shown(kind, windowsOf(u), now)
	if len(ws) == 0 {
		return nil
	}
	// The proxy marks the binding window. When it marks none (an older
	// proxy, or only the 5h/7d pair known), the fullest window is the one
	// that will stop the credential first.
	binding := -1
	for i, w := range ws {
		if w.Binding {
			binding = i
			break
		}
	}
	if binding < 0 {
		for i, w := range ws {
			if binding < 0 || used(w, now) > used(ws[binding], now) {
				binding = i
			}
		}
	}
	out := make([]Meter, 0, len(ws))
	for i, w := range ws {
		v := used(w, now)
		mt := Meter{Name: WindowName(w.Name), Value: v, Level: UsageLevel(v), Binding: i == binding}
		mt.Text = mt.Name + " " + Percent(v)
		switch {
		case w.ResetsAt == nil:
		case w.ResetsAt.After(now):
			mt.resetsIn = w.ResetsAt.Sub(now)
			mt.Resets = "resets in " + Until(mt.resetsIn)
			mt.ResetsAt = m.clockTime(*w.ResetsAt, now)
		default:
			mt.Resets = "reset"
		}
		out = append(out, mt)
	}
	return out
}

// countWindows are the per-minute request and token limits every answer
// reports, API key or not.
var countWindows = map[string]bool{"requests": true, "tokens": true, "input_tokens": true, "output_tokens": true}

// shown picks the windows worth a bar. A subscription's are its plan's
// (5h, 7d, per model): the per-minute counts beside them are never what
// runs out first, and four bars near 0 % would bury the two that matter.
// An API key has only those counts, so it gets one bar, the one that
// limits it.
func shown(kind string, ws []api.Window, now time.Time) []api.Window {
	var plan, counts []api.Window
	for _, w := range ws {
		if countWindows[w.Name] {
			counts = append(counts, w)
		} else {
			plan = append(plan, w)
		}
	}
	if kind != api.KindAPIKey && len(plan) > 0 {
		return plan
	}
	if kind != api.KindAPIKey {
		return nil
	}
	if len(plan) > 0 {
		return plan
	}
	best := -1
	for i, w := range counts {
		if w.Binding {
			return counts[i : i+1]
		}
		if best < 0 || used(w, now) > used(counts[best], now) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	return counts[best : best+1]
}

// windowsOf is every window u reports; the 5h and 7d fields stand in for
// a proxy that does not list Windows.
func windowsOf(u *api.Utilization) []api.Window {
	if u == nil {
		return nil
	}
	if len(u.Windows) > 0 {
		return u.Windows
	}
	var out []api.Window
	for _, w := range []struct {
		name string
		w    *api.Window
	}{{"5h", u.FiveHour}, {"7d", u.SevenDay}} {
		if w.w != nil {
			x := *w.w
			x.Name = w.name
			out = append(out, x)
		}
	}
	return out
}

// used is w's fraction at now, clamped to 0..1 (Codex has reported 101 %).
// A window whose reset has passed started over: until the upstream says
// more, nothing of it is used.
func used(w api.Window, now time.Time) float64 {
	if w.ResetsAt != nil && !w.ResetsAt.After(now) {
		return 0
	}
	if math.IsNaN(w.Used) {
		return 0
	}
	return max(0, min(1, w.Used))
}

// WindowName is how a person reads a window's name: "7d_sonnet" is
// "7d sonnet", Anthropic's included-overage pool "7d_oi" is "7d extra".
func WindowName(name string) string {
	if name == "" {
		return "usage"
	}
	head, model, ok := strings.Cut(name, "_")
	if !ok {
		return name
	}
	if model == "oi" {
		model = "extra"
	}
	return head + " " + model
}

// Until writes the time to a window's reset, to the minute ("2h 13m",
// "45m", "3d 4h"), rounded up so it never says 0m while time is left.
func Until(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Minute {
		return Dur(d)
	}
	mins := int64(math.Ceil(d.Minutes()))
	switch {
	case mins < 60:
		return fmt.Sprintf("%dm", mins)
	case mins < 24*60:
		if mins%60 == 0 {
			return fmt.Sprintf("%dh", mins/60)
		}
		return fmt.Sprintf("%dh %dm", mins/60, mins%60)
	}
	h := (mins + 59) / 60
	if h%24 == 0 {
		return fmt.Sprintf("%dd", h/24)
	}
	return fmt.Sprintf("%dd %dh", h/24, h%24)
}

// clockTime writes t as the menu does: the time of day within a day,
// with the weekday beyond.
func (m *Model) clockTime(t, now time.Time) string {
	t = t.In(m.loc())
	if t.Sub(now) < 24*time.Hour {
		return t.Format("15:04")
	}
	return t.Format("Mon 15:04")
}

// binding is the row's binding meter, nil when it has none.
func binding(ms []Meter) *Meter {
	for i := range ms {
		if ms[i].Binding {
			return &ms[i]
		}
	}
	return nil
}

// menuState is what the tray menu says about a row after its label: a
// ready subscription by its binding window ("5h 72% · resets 14:20"),
// anything else by its state line.
func menuState(r *Row) string {
	if r.Badge.Text == badgeReady && r.Kind == api.KindOAuth {
		if b := binding(r.Meters); b != nil {
			return joinNonEmpty(" · ", b.Text, prefix("resets ", b.ResetsAt))
		}
	}
	if r.Line != "" {
		return r.Line
	}
	return r.Badge.Text
}

func prefix(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
