package view

import (
	"fmt"
	"slices"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Paces are the limits the pool learned from 429s that named no reset
// (docs/pool.md, Pacing). The snapshot brings them, and pace_changed each
// change after (docs/events.md), a forgotten pace included.

// PaceText is how a pace reads on a row: "paced · 30 per 5m · next 40s".
// A model's pace names the model; a pace not learned whole says what is
// known so far.
func PaceText(p api.Pace, now time.Time) string {
	head := "paced"
	switch p.Scope {
	case scopeModel:
		if p.Model != "" {
			head += " " + p.Model
		}
	case scopeProvider:
		head += " with the whole provider"
	}
	var rate string
	switch {
	case p.Requests > 0 && p.WindowMS > 0:
		rate = fmt.Sprintf("%d per %s", p.Requests, Dur(time.Duration(p.WindowMS)*time.Millisecond))
	case p.Requests > 0:
		rate = fmt.Sprintf("%d a window, its length not learned yet", p.Requests)
	default:
		rate = "learning its limit"
	}
	next := ""
	if p.Next != nil && p.Next.After(now) {
		next = "next " + Dur(p.Next.Sub(now))
	}
	return joinNonEmpty(" · ", head, rate, next)
}

// holdingPace is the pace a row shows: the one holding c back longest at
// now, else the first (the provider's, by status's order).
func holdingPace(c *api.CredentialStatus, now time.Time) *api.Pace {
	var best *api.Pace
	for i := range c.Paces {
		p := &c.Paces[i]
		if p.Next != nil && p.Next.After(now) && (best == nil || best.Next == nil || p.Next.After(*best.Next)) {
			best = p
		}
	}
	if best == nil && len(c.Paces) > 0 {
		best = &c.Paces[0]
	}
	return best
}

// paceChanged takes a credential's paces from pace_changed: all of them,
// so an empty list forgets the last.
func (m *Model) paceChanged(ev api.Event) {
	if c := m.cred(ev.CredentialID); c != nil {
		c.Paces = slices.Clone(ev.Paces)
	}
}
