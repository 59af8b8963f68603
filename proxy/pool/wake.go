package pool

import (
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// wakeAt is one timer that closes Changed's channel at a time: the next
// probe slot of a guessed outage (outage.go), the earliest slot of a paced
// credential (pace_hold.go). Its fields are guarded by p.mu.
type wakeAt struct {
	at    time.Time
	timer clock.Timer
}

// arm replaces any armed wake-up with one at at (after now). Requires
// p.mu.
func (w *wakeAt) arm(p *Pool, at, now time.Time) {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.at = at
	w.timer = p.clk.AfterFunc(max(at.Sub(now), 1), func() {
		p.mu.Lock()
		if w.at.Equal(at) {
			w.timer = nil
			p.wakeLocked()
		}
		p.mu.Unlock()
	})
}
