package view

import (
	"fmt"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// describer writes one type of event as a line of the recent list; name is
// how the line calls the event's credential (Model.name).
type describer func(m *Model, ev api.Event, name string) string

// describers holds one line writer per event type. A type missing here
// shows as its type and name.
var describers = map[api.EventType]describer{
	api.EventSnapshot: describeSnapshot,
	EventOffline: func(m *Model, _ api.Event, _ string) string {
		if m.conn == Offline {
			return "" // the client says so on every failed retry
		}
		return "lost the connection to the proxy"
	},
	EventUnauthorized: func(m *Model, _ api.Event, _ string) string {
		if m.conn == Unauthorized {
			return ""
		}
		return "the proxy refused the admin token"
	},
	api.EventProxyStarted:      fixed("proxy started"),
	api.EventProxyStopping:     fixed("proxy stopping"),
	api.EventCooldownStarted:   describeCooldownStarted,
	api.EventCooldownEnded:     describeCooldownEnded,
	api.EventParked:            describeParked,
	api.EventReloginRequired:   namedWhy(" needs a new login"),
	api.EventCredentialAdded:   named(" added"),
	api.EventCredentialRemoved: named(" removed"),
	api.EventCredentialUpdated: func(_ *Model, ev api.Event, name string) string {
		if ev.State != "" {
			return name + " is now " + ev.State
		}
		return name + " updated"
	},
	api.EventWaitStarted:    describeWaitStarted,
	api.EventWaitEnded:      describeWaitEnded,
	api.EventTokenRefreshed: named(" token refreshed"),
	api.EventFallback: func(_ *Model, ev api.Event, _ string) string {
		return fmt.Sprintf("served by %s while %s cools down", ProviderTitle(ev.To), ProviderTitle(ev.From))
	},
	api.EventRotated: func(m *Model, ev api.Event, _ string) string {
		return fmt.Sprintf("%s → %s%s", m.name(ev.From, "", ev.Provider), m.name(ev.To, "", ev.Provider), paren(ev.Reason))
	},
	api.EventRetried:         namedWhy(" retried"),
	api.EventRequestFinished: fixed(""), // counters only; one line per request would bury the rest
	api.EventUsageUpdated:    (*Model).describeUsage,
	api.EventUsageWarning:    (*Model).describeUsage,
	api.EventPaceChanged:     fixed(""), // the row shows the pace; a line per window would bury the rest
	api.EventConfigReloaded: func(_ *Model, ev api.Event, _ string) string {
		return "config.toml reloaded" + paren(ev.Reason)
	},
	api.EventConfigRejected: func(_ *Model, ev api.Event, _ string) string {
		return "config.toml edit refused, the running config stays" + paren(ev.Reason)
	},
	api.EventHistoryProblem: func(_ *Model, ev api.Event, _ string) string {
		if ev.Reason == "" {
			return "request history is being saved again"
		}
		return "request history is not being saved" + paren(ev.Reason)
	},
	api.EventClientAdded: func(_ *Model, ev api.Event, _ string) string {
		return "client key " + quoted(ev.Client) + " added"
	},
	api.EventClientRevoked: func(_ *Model, ev api.Event, _ string) string {
		return "client key " + quoted(ev.Client) + " revoked"
	},
}

// describe writes ev as a line of the recent list, without its time; empty
// for events that only move counters.
func (m *Model) describe(ev api.Event) string {
	name := m.name(ev.CredentialID, ev.Label, ev.Provider)
	if d, ok := describers[ev.Type]; ok {
		return d(m, ev, name)
	}
	return joinNonEmpty(" ", string(ev.Type), name)
}

// fixed is a line that is the same for every event of its type.
func fixed(line string) describer {
	return func(*Model, api.Event, string) string { return line }
}

// named is the credential's name, then what happened to it.
func named(what string) describer {
	return func(_ *Model, _ api.Event, name string) string { return name + what }
}

// namedWhy is named with the event's reason in parentheses.
func namedWhy(what string) describer {
	return func(_ *Model, ev api.Event, name string) string { return name + what + paren(ev.Reason) }
}

// paren joins the non-empty parts in parentheses after a space, or is
// empty when every part is.
func paren(parts ...string) string {
	if s := joinNonEmpty(", ", parts...); s != "" {
		return " (" + s + ")"
	}
	return ""
}

func describeSnapshot(_ *Model, ev api.Event, _ string) string {
	n := 0
	if ev.Snapshot != nil {
		for _, p := range ev.Snapshot.Providers {
			n += len(p.Credentials)
		}
	}
	return fmt.Sprintf("connected to the proxy (%s)", plural(int64(n), "credential"))
}

// providerWide reports whether a cooldown event covers a whole provider:
// its scope says so, or it names neither a scope nor a credential.
func providerWide(ev api.Event) bool {
	return ev.Scope == scopeProvider || (ev.Scope == "" && ev.CredentialID == "")
}

func describeCooldownStarted(_ *Model, ev api.Event, name string) string {
	left := ""
	if ev.Until != nil {
		left = " " + Dur(ev.Until.Sub(ev.Time))
	}
	why := paren(ev.Reason, step(&api.Cooldown{Step: ev.Step, Steps: ev.Steps}))
	switch {
	case providerWide(ev):
		return fmt.Sprintf("every %s credential cooling%s%s", ProviderTitle(ev.Provider), left, why)
	case ev.Scope == scopeModel:
		return fmt.Sprintf("%s cooling%s for %s%s", name, left, ev.Model, why)
	}
	return fmt.Sprintf("%s cooling%s%s", name, left, why)
}

// describeCooldownEnded says why a cooldown ended early (its window
// showed room again), when the event says.
func describeCooldownEnded(_ *Model, ev api.Event, name string) string {
	why := paren(ev.Reason)
	switch {
	case providerWide(ev):
		return ProviderTitle(ev.Provider) + " ready again" + why
	case ev.Scope == scopeModel:
		return fmt.Sprintf("%s ready again for %s%s", name, ev.Model, why)
	}
	return name + " ready again" + why
}

func describeParked(_ *Model, ev api.Event, name string) string {
	kind := parkKind(ev)
	if kind == api.ParkRelogin {
		return "" // relogin_required follows and says it
	}
	if ev.Kind == api.ParkRegion {
		kind = "the provider refuses its location"
	}
	if ev.Model != "" {
		return fmt.Sprintf("%s parked for %s%s", name, ev.Model, paren(kind, ev.Reason))
	}
	return name + " parked" + paren(kind, ev.Reason)
}

func describeWaitStarted(_ *Model, ev api.Event, name string) string {
	upTo := ""
	if ev.Until != nil {
		upTo = paren("up to " + Dur(ev.Until.Sub(ev.Time)))
	}
	if ev.Kind == api.WaitCapacity {
		return fmt.Sprintf("%s overloaded: a request waits on %s%s", ProviderTitle(ev.Provider), name, upTo)
	}
	return fmt.Sprintf("holding a request until a %s credential cools down%s", ProviderTitle(ev.Provider), upTo)
}

func describeWaitEnded(_ *Model, ev api.Event, _ string) string {
	what := "cool-down wait"
	if ev.Kind == api.WaitCapacity {
		what = "capacity wait"
	}
	after := ""
	if ev.WaitMS > 0 {
		after = " after " + Dur(time.Duration(ev.WaitMS)*time.Millisecond)
	}
	return fmt.Sprintf("%s %s ended%s%s", ProviderTitle(ev.Provider), what, after, outcome(ev.Outcome))
}
