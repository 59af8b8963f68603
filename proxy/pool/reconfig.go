package pool

import (
	"slices"
	"time"
)

// SetTuning changes the ladder, its reset and the default in-flight limit
// of a running pool, as a config reload does. Cooldowns running keep the
// end they were given; the next hit on any key climbs the new ladder from
// the step its memory is at (capped at the new ladder's last step).
// Zero values take the defaults, as in New.
func (p *Pool) SetTuning(ladderSteps []time.Duration, resetAfter time.Duration, maxInFlight int) {
	var steps []time.Duration
	for _, d := range ladderSteps {
		if d > 0 {
			steps = append(steps, d)
		}
	}
	if len(steps) == 0 {
		steps = slices.Clone(DefaultLadder)
	}
	if resetAfter <= 0 {
		resetAfter = DefaultResetAfter
	}
	p.mu.Lock()
	p.lad = ladder{steps: steps, resetAfter: resetAfter}
	p.cfg.Ladder, p.cfg.ResetAfter, p.cfg.MaxInFlight = steps, resetAfter, max(maxInFlight, 0)
	fx := effects{wake: true} // a higher in-flight limit may free a waiter
	p.unlock(&fx)
}
