package classify

import (
	"sync"
	"time"
)

// Google's daily quotas reset at midnight Pacific time
// (ai.google.dev/gemini-api/docs/rate-limits: "Requests per day (RPD)
// quotas reset at midnight Pacific time").

// GoogleDailyReset is the first midnight in America/Los_Angeles after now,
// when Google's daily quotas refill.
func GoogleDailyReset(now time.Time) time.Time {
	if loc := pacific(); loc != nil {
		y, m, d := now.In(loc).Date()
		return time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	}
	return pacificMidnightByRule(now)
}

var (
	pacificOnce sync.Once
	pacificLoc  *time.Location
)

// pacific is America/Los_Angeles from the system's time zone database, or
// nil where there is none (Windows without Go installed, a bare
// container). The rule below then stands in: the package does not embed
// time/tzdata, which would add 450 KB to every binary for one zone whose
// rule has been fixed since 2007.
func pacific() *time.Location {
	pacificOnce.Do(func() {
		if loc, err := time.LoadLocation("America/Los_Angeles"); err == nil {
			pacificLoc = loc
		}
	})
	return pacificLoc
}

// pacificOffset is Pacific time's offset from UTC at t by the US rule
// (Energy Policy Act of 2005): daylight time from 02:00 on the second
// Sunday of March to 02:00 on the first Sunday of November, local time.
func pacificOffset(t time.Time) time.Duration {
	u := t.UTC()
	y := u.Year()
	start := nthSunday(y, time.March, 2).Add(10 * time.Hour) // 02:00 PST
	end := nthSunday(y, time.November, 1).Add(9 * time.Hour) // 02:00 PDT
	if !u.Before(start) && u.Before(end) {
		return -7 * time.Hour
	}
	return -8 * time.Hour
}

// nthSunday is the n-th Sunday of a month, at 00:00 UTC.
func nthSunday(y int, m time.Month, n int) time.Time {
	first := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	return first.AddDate(0, 0, (7-int(first.Weekday()))%7+7*(n-1))
}

// pacificMidnightByRule is GoogleDailyReset without a time zone database.
// The clocks change at 02:00, so midnight wears the offset of the day it
// starts; only between 00:00 and 02:00 of a change day does now wear
// another, and the second look settles it.
func pacificMidnightByRule(now time.Time) time.Time {
	off := pacificOffset(now)
	y, m, d := now.UTC().Add(off).Date()
	local := time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	next := local.Add(-off)
	if off2 := pacificOffset(next); off2 != off {
		next = local.Add(-off2)
	}
	return next
}
