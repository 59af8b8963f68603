package view

import (
	"fmt"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// rearm forgets the notification flags of conditions that are over at now,
// so the next episode notifies again.
func (m *Model) rearm(now time.Time) {
	for i := range m.status.Providers {
		p := &m.status.Providers[i]
		if ex, _ := exhausted(p, now); !ex {
			delete(m.exhaustedSent, p.Name)
			delete(m.fallbacks, p.Name)
		}
	}
}

// decide returns the notices ev calls for. prev is the link state before ev.
// Each condition notifies once per episode: a flag goes up with the notice
// and comes down only when the condition is seen to be over.
func (m *Model) decide(ev api.Event, prev Conn, now time.Time) []Notice {
	var out []Notice
	if ev.Type == EventOffline && prev == Online && !m.stopping {
		out = append(out, Notice{
			Key:   "offline",
			Title: "subpool proxy stopped",
			Body: fmt.Sprintf("Nothing answers at %s any more, so tools pointed at it will fail. subpool keeps trying to reconnect.",
				m.address()),
		})
	}
	// While the link is down the status is stale: neither raise nor clear.
	if m.conn != Online {
		return out
	}

	broken := map[string]bool{}
	for i := range m.status.Providers {
		p := &m.status.Providers[i]
		for j := range p.Credentials {
			c := &p.Credentials[j]
			park := findPark(c, func(x api.Park) bool { return x.Kind == api.ParkRelogin })
			if park == nil {
				continue
			}
			broken[c.ID] = true
			if m.reloginSent[c.ID] {
				continue
			}
			m.reloginSent[c.ID] = true
			out = append(out, reloginNotice(p, c, park))
		}
	}
	for id := range m.reloginSent {
		if !broken[id] {
			delete(m.reloginSent, id) // fixed: a later breakage is news again
		}
	}

	for i := range m.status.Providers {
		p := &m.status.Providers[i]
		ex, next := exhausted(p, now)
		if ex && !m.exhaustedSent[p.Name] {
			out = append(out, m.exhaustedNotice(p, next, now))
		}
		if ex {
			m.exhaustedSent[p.Name] = true
		} else {
			delete(m.exhaustedSent, p.Name)
		}
	}
	return out
}

// configRejected tells the person an edit of config.toml did not apply:
// the proxy keeps running on the config it had, which a saved file no
// longer shows.
func configRejected(ev api.Event) Notice {
	return Notice{
		Key:   "config/rejected",
		Title: "config.toml edit refused",
		Body:  ev.Reason + ". subpool keeps the config it had; fix the file and save it again.",
	}
}

func historyProblem(ev api.Event) Notice {
	return Notice{
		Key:   "history/problem",
		Title: "Request history is not being saved",
		Body:  "Because " + ev.Reason + ". Requests are served as usual; their rows wait, and are written once this is fixed.",
	}
}

func quoted(s string) string { return "\u201c" + s + "\u201d" }

func reloginNotice(p *api.ProviderStatus, c *api.CredentialStatus, park *api.Park) Notice {
	label := orWord(c.Label, c.ID)
	why := ""
	if park.Reason != "" {
		why = " (" + park.Reason + ")"
	}
	n := Notice{
		Key:   "relogin/" + c.ID,
		Title: label + " needs a new login",
		Body: fmt.Sprintf("%s refused its login%s. Open subpool and choose Log in again; until then it is left out.",
			ProviderTitle(p.Name), why),
	}
	if c.Kind == api.KindAPIKey {
		n.Title = label + ": key refused"
		n.Body = fmt.Sprintf("%s refused the key%s. Open subpool and choose Replace key; until then it is left out.",
			ProviderTitle(p.Name), why)
	}
	return n
}

func (m *Model) exhaustedNotice(p *api.ProviderStatus, next, now time.Time) Notice {
	title := ProviderTitle(p.Name)
	n := Notice{Key: "exhausted/" + p.Name, Title: "No " + title + " credential is ready"}
	if next.IsZero() {
		n.Body = fmt.Sprintf("Every %s credential needs you: open subpool to log in again or sort out billing.", title)
	} else {
		n.Body = fmt.Sprintf("All are cooling down; the next is ready in %s (at %s). Requests wait or fail until then.",
			Dur(next.Sub(now)), m.stamp(next))
	}
	return n
}

func outcome(o string) string {
	switch o {
	case "":
		return ""
	case "ready":
		return ": served"
	case "aborted":
		return ": the client left"
	case "budget":
		return ": gave up, out of time"
	}
	return ": " + o
}

// name is how a line calls a credential: its label, else the event's, else
// its id, else the provider.
func (m *Model) name(id, label, provider string) string {
	if c := m.cred(id); c != nil && c.Label != "" {
		return c.Label
	}
	switch {
	case label != "":
		return label
	case id != "":
		return id
	}
	return ProviderTitle(provider)
}
