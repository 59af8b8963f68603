package app

import (
	"fmt"
	"math"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// windowWords is the UTILIZATION column of `subpool list`: the window that
// binds the credential now, with its reset in local time ("5h 72%
// ↻14:20"), and the reserve while it holds the credential back.
// Credentials reported only in the old 5h/7d shape keep utilWords.
func windowWords(c api.CredentialStatus, now time.Time) string {
	u := c.Usage
	if u == nil || len(u.Windows) == 0 {
		return utilWords(u)
	}
	w := u.Windows[0]
	for _, x := range u.Windows {
		if x.Binding {
			w = x
			break
		}
	}
	s := fmt.Sprintf("%s %d%%", w.Name, int(math.Round(w.Used*100)))
	if w.ResetsAt != nil && w.ResetsAt.After(now) {
		s += " ↻" + resetWords(w.ResetsAt.Local(), now.Local())
	}
	if c.ReservedUntil != nil {
		s += fmt.Sprintf(" (held: reserve %d%%)", c.Reserve)
	}
	return s
}

// resetWords is a reset time as a person reads it: the time of day
// within the next day, else the weekday too, else the date.
func resetWords(t, now time.Time) string {
	switch d := t.Sub(now); {
	case d < 24*time.Hour:
		return t.Format("15:04")
	case d < 6*24*time.Hour:
		return t.Format("Mon 15:04")
	}
	return t.Format("Jan 2 15:04")
}
