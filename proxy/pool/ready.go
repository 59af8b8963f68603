package pool

// Changed returns a channel that is closed at the next change that may let
// a Pick succeed that failed before: a lease released, a probe answered
// (Confirm, a success Recorded, a budget reported), a cooldown or a spent
// budget ended by its timer, Reset, a credential added or moved, Resume,
// Unpark, guessed cooldowns ended by a provider probe, and the next
// provider probe slot of a pool-wide outage (see Pick). It is a broadcast:
// every holder of the channel wakes, and each must Pick again to find out,
// since several may compete for one freed slot. Nothing else closes it,
// so a waiter needs no polling interval.
//
// Take the channel before calling Pick, so a change that lands between a
// refused Pick and the wait is not lost:
//
//	for {
//		changed := p.Changed()
//		l, err := p.Pick(req)
//		if err == nil {
//			return l, nil
//		}
//		// err is an *Unavailable; give up here if nothing can change.
//		select {
//		case <-changed:
//		case <-deadline: // the caller's own bound (e.g. sole_provider_max)
//			return nil, err
//		case <-ctx.Done():
//			return nil, ctx.Err()
//		}
//	}
//
// Unavailable.NextReady still says how long the wait is expected to be;
// the channel closes at that instant (or earlier) without a timer of the
// caller's own.
func (p *Pool) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready == nil {
		p.ready = make(chan struct{})
	}
	return p.ready
}

// wakeLocked closes the channel Changed handed out, if any; the next
// Changed makes a new one. Closing never blocks, so it is done under the
// lock, which keeps a waiter from taking the old channel after the change.
// Requires p.mu.
func (p *Pool) wakeLocked() {
	if p.ready != nil {
		close(p.ready)
		p.ready = nil
	}
}
