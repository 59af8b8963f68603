package app

import (
	"fmt"
	"math"
	"strings"
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

// paceWords is what `subpool list` says of a credential held to paces the
// pool learned from 429s that named no reset (docs/pool.md, Pacing): "paced
// · 30 per 5m · next 40s", one pace after another; "" for none.
func paceWords(ps []api.Pace, now time.Time) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		head := "paced"
		switch p.Scope {
		case "model":
			if p.Model != "" {
				head += " " + p.Model
			}
		case "provider":
			head += " with the whole provider"
		}
		rate := "learning its limit"
		switch {
		case p.Requests > 0 && p.WindowMS > 0:
			rate = fmt.Sprintf("%d per %s", p.Requests, shortDuration(time.Duration(p.WindowMS)*time.Millisecond))
		case p.Requests > 0:
			rate = fmt.Sprintf("%d a window, its length not learned yet", p.Requests)
		}
		s := head + " · " + rate
		if p.Next != nil && p.Next.After(now) {
			s += " · next " + shortDuration(p.Next.Sub(now))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// shortDuration is d to the second, rounded up so a wait never reads 0s,
// without the zero units Go writes ("5m", not "5m0s").
func shortDuration(d time.Duration) string {
	s := (d + time.Second - 1).Truncate(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
