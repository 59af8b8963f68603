package view

import (
	"fmt"
	"slices"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Paces are the limits the pool learned from 429s that named no reset
// (docs/pool.md, Pacing). They come in status only: a paced refusal sends
// no event (docs/events.md), so the UI reads status again when PaceNews
// says an event may have changed one, and hands the paces to ApplyPaces.

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

// PaceNews reports an event after which a pace may have started, moved or
// been forgotten: a refusal (cooldown, rotation, wait, a 429 relayed) or a
// change made by hand (reset, pause).
func PaceNews(ev api.Event) bool {
	switch ev.Type {
	case api.EventCooldownStarted, api.EventRotated, api.EventWaitStarted, api.EventCredentialUpdated:
		return true
	case api.EventRequestFinished:
		return ev.Status == 429
	}
	return false
}

// ApplyPaces takes the paces of every credential st lists and leaves all
// else to the events. A credential st does not know keeps what it had.
func (m *Model) ApplyPaces(st api.Status) {
	for _, p := range st.Providers {
		for _, sc := range p.Credentials {
			if c := m.cred(sc.ID); c != nil {
				c.Paces = slices.Clone(sc.Paces)
			}
		}
	}
}

// Paced reports whether any credential shows a pace, which is worth
// reading status again for now and then: its window moves, and the pool
// forgets it after a quiet spell without saying so.
func (m *Model) Paced() bool {
	for _, p := range m.status.Providers {
		for _, c := range p.Credentials {
			if len(c.Paces) > 0 {
				return true
			}
		}
	}
	return false
}
