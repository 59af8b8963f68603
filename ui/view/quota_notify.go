package view

import (
	"fmt"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// usageUpdated puts a credential's new windows in place of the old ones.
// The 5h and 7d fields follow, so a reader of either sees the same thing.
func (m *Model) usageUpdated(ev api.Event) {
	c := m.cred(ev.CredentialID)
	if c == nil {
		return
	}
	u := api.Utilization{UpdatedAt: ev.Time}
	if c.Usage != nil {
		u.Status = c.Usage.Status
	}
	u.Windows = append([]api.Window(nil), ev.Windows...)
	u.FiveHour, u.SevenDay = api.SharedWindows(u.Windows)
	c.Usage = &u
	m.rearmWarnings()
}

func usageKey(cred, window string) string { return "usage/" + cred + "/" + window }

// usageWarning turns a usage_warning into its notice: one per window when
// it crosses warn_at, one when a spent subscription comes back. The proxy
// sends each once; the model still drops a repeat for a window it warned
// about that has not reset since, so a replayed stream does not nag.
func (m *Model) usageWarning(ev api.Event, now time.Time) []Notice {
	c := m.cred(ev.CredentialID)
	label := m.name(ev.CredentialID, ev.Label, ev.Provider)
	window := WindowName(ev.Window)
	key := usageKey(ev.CredentialID, ev.Window)
	// The proxy's Reason says what the title says; the body says what
	// follows from it.
	if ev.Kind == api.UsageBack {
		delete(m.warned, key)
		return []Notice{{Key: key, Title: label + " is back — " + window + " window reset",
			Body: "Its " + window + " window has room again, so requests go to it again."}}
	}
	usedNow := ev.Used
	var w *api.Window
	if c != nil {
		w = findWindow(c.Usage, ev.Window)
	}
	if usedNow == 0 && w != nil {
		usedNow = w.Used
	}
	if _, ok := m.warned[key]; ok {
		return nil
	}
	m.warned[key] = usedNow
	n := Notice{Key: key, Title: fmt.Sprintf("%s: %s window at %s", label, window, Percent(max(0, min(1, usedNow))))}
	reset := ev.Until
	if reset == nil && w != nil {
		reset = w.ResetsAt
	}
	resets, held := "", ""
	if reset != nil && reset.After(now) {
		resets = fmt.Sprintf("It resets at %s (in %s).", m.clockTime(*reset, now), Until(reset.Sub(now)))
	}
	if c != nil && c.Reserve > 0 {
		held = fmt.Sprintf("Your %d%% reserve holds it back at %d%%.", c.Reserve, 100-c.Reserve)
	}
	n.Body = joinNonEmpty(" ", resets, held)
	if n.Body == "" {
		n.Body = "Open subpool to see every window of it."
	}
	return []Notice{n}
}

// rearmWarnings forgets a warning once its window is seen below the use it
// was warned at: a window only goes down by resetting, and the next time it
// fills is news again. A credential gone takes its warnings with it.
func (m *Model) rearmWarnings() {
	for key, at := range m.warned {
		rest, _ := strings.CutPrefix(key, "usage/")
		id, name, _ := strings.Cut(rest, "/")
		c := m.cred(id)
		if c == nil {
			delete(m.warned, key)
			continue
		}
		if w := findWindow(c.Usage, name); w != nil && w.Used < at {
			delete(m.warned, key)
		}
	}
}

func findWindow(u *api.Utilization, name string) *api.Window {
	ws := windowsOf(u)
	for i := range ws {
		if ws[i].Name == name {
			return &ws[i]
		}
	}
	return nil
}

// describeUsage is a usage event's line in the recent list.
func (m *Model) describeUsage(ev api.Event, name string) string {
	switch ev.Type {
	case api.EventUsageWarning:
		if ev.Kind == api.UsageBack {
			return fmt.Sprintf("%s is back (%s window reset)", name, WindowName(ev.Window))
		}
		return fmt.Sprintf("%s: %s window at %s", name, WindowName(ev.Window), Percent(max(0, min(1, ev.Used))))
	}
	return "" // usage_updated: the bars show it; a line each would bury the rest
}
