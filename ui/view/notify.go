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

// describe writes ev as a line of the recent list, without its time; empty
// for events that only move counters.
func (m *Model) describe(ev api.Event) string {
	name := m.name(ev.CredentialID, ev.Label, ev.Provider)
	paren := func(parts ...string) string {
		if s := joinNonEmpty(", ", parts...); s != "" {
			return " (" + s + ")"
		}
		return ""
	}
	switch ev.Type {
	case api.EventSnapshot:
		n := 0
		if ev.Snapshot != nil {
			for _, p := range ev.Snapshot.Providers {
				n += len(p.Credentials)
			}
		}
		return fmt.Sprintf("connected to the proxy (%s)", plural(int64(n), "credential"))
	case EventOffline:
		if m.conn == Offline {
			return "" // the client says so on every failed retry
		}
		return "lost the connection to the proxy"
	case EventUnauthorized:
		if m.conn == Unauthorized {
			return ""
		}
		return "the proxy refused the admin token"
	case api.EventProxyStarted:
		return "proxy started"
	case api.EventProxyStopping:
		return "proxy stopping"
	case api.EventCooldownStarted:
		left := ""
		if ev.Until != nil {
			left = " " + Dur(ev.Until.Sub(ev.Time))
		}
		why := paren(ev.Reason, step(&api.Cooldown{Step: ev.Step, Steps: ev.Steps}))
		switch {
		case ev.Scope == scopeProvider || (ev.Scope == "" && ev.CredentialID == ""):
			return fmt.Sprintf("every %s credential cooling%s%s", ProviderTitle(ev.Provider), left, why)
		case ev.Scope == scopeModel:
			return fmt.Sprintf("%s cooling%s for %s%s", name, left, ev.Model, why)
		}
		return fmt.Sprintf("%s cooling%s%s", name, left, why)
	case api.EventCooldownEnded:
		switch {
		case ev.Scope == scopeProvider || (ev.Scope == "" && ev.CredentialID == ""):
			return ProviderTitle(ev.Provider) + " ready again"
		case ev.Scope == scopeModel:
			return fmt.Sprintf("%s ready again for %s", name, ev.Model)
		}
		return name + " ready again"
	case api.EventParked:
		if parkKind(ev) == api.ParkRelogin {
			return "" // relogin_required follows and says it
		}
		if ev.Model != "" {
			return fmt.Sprintf("%s parked for %s%s", name, ev.Model, paren("payment", ev.Reason))
		}
		return name + " parked" + paren("payment", ev.Reason)
	case api.EventReloginRequired:
		return name + " needs a new login" + paren(ev.Reason)
	case api.EventCredentialAdded:
		return name + " added"
	case api.EventCredentialRemoved:
		return name + " removed"
	case api.EventCredentialUpdated:
		if ev.State != "" {
			return name + " is now " + ev.State
		}
		return name + " updated"
	case api.EventWaitStarted:
		upTo := ""
		if ev.Until != nil {
			upTo = paren("up to " + Dur(ev.Until.Sub(ev.Time)))
		}
		if ev.Kind == api.WaitCapacity {
			return fmt.Sprintf("%s overloaded: a request waits on %s%s", ProviderTitle(ev.Provider), name, upTo)
		}
		return fmt.Sprintf("holding a request until a %s credential cools down%s", ProviderTitle(ev.Provider), upTo)
	case api.EventWaitEnded:
		what := "cool-down wait"
		if ev.Kind == api.WaitCapacity {
			what = "capacity wait"
		}
		after := ""
		if ev.WaitMS > 0 {
			after = " after " + Dur(time.Duration(ev.WaitMS)*time.Millisecond)
		}
		return fmt.Sprintf("%s %s ended%s%s", ProviderTitle(ev.Provider), what, after, outcome(ev.Outcome))
	case api.EventTokenRefreshed:
		return name + " token refreshed"
	case api.EventFallback:
		return fmt.Sprintf("served by %s while %s cools down", ProviderTitle(ev.To), ProviderTitle(ev.From))
	case api.EventRotated:
		return fmt.Sprintf("%s → %s%s", m.name(ev.From, "", ev.Provider), m.name(ev.To, "", ev.Provider), paren(ev.Reason))
	case api.EventRetried:
		return name + " retried" + paren(ev.Reason)
	case api.EventRequestFinished:
		return "" // counters only; one line per request would bury the rest
	case api.EventUsageUpdated, api.EventUsageWarning:
		return m.describeUsage(ev, name)
	case api.EventConfigReloaded:
		return "config.toml reloaded" + paren(ev.Reason)
	case api.EventConfigRejected:
		return "config.toml edit refused, the running config stays" + paren(ev.Reason)
	case api.EventClientAdded:
		return "client key " + quoted(ev.Client) + " added"
	case api.EventClientRevoked:
		return "client key " + quoted(ev.Client) + " revoked"
	}
	return joinNonEmpty(" ", string(ev.Type), name)
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
