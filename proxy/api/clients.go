package api

import "time"

// Events of client keys and config reloads.
const (
	EventClientAdded    EventType = "client_added"    // Client: its name
	EventClientRevoked  EventType = "client_revoked"  // Client: its name
	EventConfigReloaded EventType = "config_reloaded" // Reason: what applied now, and what waits for a restart
	EventConfigRejected EventType = "config_rejected" // Reason: the error, naming the key; the running config stays
	// EventHistoryProblem: the request history cannot be written (Reason:
	// why, in plain words), or can again (Reason empty). The rows wait
	// meanwhile, up to a bound; status.history counts them.
	EventHistoryProblem EventType = "history_problem"
)

// ClientStatus is one client key, by name: never the key itself.
type ClientStatus struct {
	Name      string     `json:"name"`
	Providers []string   `json:"providers,omitempty"` // empty: all
	Models    []string   `json:"models,omitempty"`    // globs; empty: all
	Added     *time.Time `json:"added,omitempty"`
	InFlight  int        `json:"in_flight"`
}

// AddClient is the body of POST /subpool/v1/clients.
type AddClient struct {
	Name      string   `json:"name"`
	Providers []string `json:"providers,omitempty"`
	Models    []string `json:"models,omitempty"`
}

// ClientAdded answers AddClient. Key is the new client key, shown this
// once (and by `subpool env`); subpool keeps it only in the keychain.
type ClientAdded struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// ReloadResult answers POST /subpool/v1/reload: the keys that changed and
// apply now, those that wait for the next start, or the error (naming the
// key) for which the edit was refused and the running config kept.
type ReloadResult struct {
	Live    []string `json:"live,omitempty"`
	Restart []string `json:"restart,omitempty"`
	Error   string   `json:"error,omitempty"`
}
