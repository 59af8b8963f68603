package ui

import (
	"context"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/ui/view"
)

// The pool's paces reach the panel only in status (view.PaceNews says
// why), so the panel reads status again a moment after an event that may
// have changed one, and every pacesEvery while one shows. It takes only
// the paces from it: the events keep everything else, and a whole new
// status would forget the waits in flight.
const (
	// pacesSettle is how long after such an event the read waits: the
	// pool has then taken the refusal in, and a burst costs one read.
	pacesSettle = 2 * time.Second
	// pacesEvery follows a pace while it shows: its next request, and its
	// end, which the pool sends no event for.
	pacesEvery = 30 * time.Second
)

// pacesLoop reads the paces until ctx ends.
func (u *UI) pacesLoop(ctx context.Context) {
	for {
		var tick clock.Timer
		var tickC <-chan time.Time
		if u.paced() {
			tick = u.clock.NewTimer(pacesEvery)
			tickC = tick.C()
		}
		select {
		case <-ctx.Done():
		case <-u.paceDue:
		case <-tickC:
		}
		if tick != nil {
			tick.Stop()
		}
		if ctx.Err() != nil || clock.Sleep(ctx, u.clock, pacesSettle) != nil {
			return
		}
		u.readPaces(ctx)
	}
}

func (u *UI) paced() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.model.Paced()
}

// readPaces asks the proxy's status and shows its paces. A failed read
// changes nothing: the event stream says when the link is down.
func (u *UI) readPaces(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	st, err := u.opts.Backend.Status(ctx)
	if err != nil {
		return
	}
	u.mu.Lock()
	u.model.ApplyPaces(st)
	u.mu.Unlock()
	u.markDirty()
}

// notePaceNews asks for a read of the paces after ev, if it may have
// changed one.
func (u *UI) notePaceNews(ev api.Event) {
	if !view.PaceNews(ev) {
		return
	}
	select {
	case u.paceDue <- struct{}{}:
	default:
	}
}
