package config

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"
)

// Reload is what an edit of config.toml changes, by key: what applies to
// the running proxy now (Live) and what waits for the next start
// (Restart). Both are sorted; both empty means nothing changed.
type Reload struct {
	Live    []string `json:"live,omitempty"`
	Restart []string `json:"restart,omitempty"`
}

// liveKeys are the keys the running proxy takes without a restart; the
// app applies each (app/reload.go), and requests in flight finish under
// the values they started with. Every other key is read once at start:
// the listener (listen, allow_remote, allow_origins), the keychain, the
// providers' addresses and the transport, history, prices.
var liveKeys = map[string]bool{
	"require_client_key":     true,
	"max_body":               true,
	"cooldown.ladder":        true,
	"cooldown.reset_after":   true,
	"wait.sole_provider_max": true,
	"wait.capacity_max":      true,
	"retry.transient":        true,
	"retry.max_attempts":     true,
	"retry.max_in_flight":    true,
	"fallback":               true,
	"models":                 true,
	"usage":                  true,
	"subscriptions":          true,
	"network":                true,

	"retry.first_event_timeout": true,
	"retry.idle_timeout":        true,
}

// fieldKeys names Config's fields as config.toml does; a field missing
// here is named by its Go name in snake case.
var fieldKeys = map[string]string{
	"Listen":           "listen",
	"AllowRemote":      "allow_remote",
	"RequireClientKey": "require_client_key",
	"AllowOrigins":     "allow_origins",
	"MaxBody":          "max_body",
	"KeychainBackend":  "keychain.backend",
	"Providers":        "providers",
	"Ladder":           "cooldown.ladder",
	"ResetAfter":       "cooldown.reset_after",
	"SoleProviderMax":  "wait.sole_provider_max",
	"CapacityMax":      "wait.capacity_max",
	"TransientBackoff": "retry.transient",
	"MaxAttempts":      "retry.max_attempts",
	"MaxInFlight":      "retry.max_in_flight",
	"HeaderTimeout":    "retry.header_timeout",
	"Fallback":         "fallback",
	"Models":           "models",
	"History":          "history",
	"Prices":           "prices",
	"Subscriptions":    "subscriptions",
	"Network":          "network",

	"FirstEventTimeout": "retry.first_event_timeout",
	"IdleTimeout":       "retry.idle_timeout",
}

// Diff compares the running config with an edited one. Providers are
// named one by one (providers.zai), since a new provider is the common
// edit and the message should say which.
func Diff(old, new Config) Reload {
	var r Reload
	add := func(key string) {
		if liveKeys[key] {
			r.Live = append(r.Live, key)
		} else {
			r.Restart = append(r.Restart, key)
		}
	}
	ov, nv := reflect.ValueOf(old), reflect.ValueOf(new)
	t := ov.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || reflect.DeepEqual(ov.Field(i).Interface(), nv.Field(i).Interface()) {
			continue
		}
		if f.Name == "Providers" {
			for _, name := range changedProviders(old.Providers, new.Providers) {
				add("providers." + name)
			}
			continue
		}
		key := fieldKeys[f.Name]
		if key == "" {
			key = snake(f.Name)
		}
		add(key)
	}
	sort.Strings(r.Live)
	sort.Strings(r.Restart)
	return r
}

func changedProviders(a, b map[string]Provider) []string {
	var out []string
	for name, p := range a {
		if q, ok := b[name]; !ok || !reflect.DeepEqual(p, q) {
			out = append(out, name)
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// FileKeys are the keys the parsed file set, dotted as in config.toml
// ("providers.zai.base_url"), in file order; tables themselves are not
// keys. Nil for Default() and for a file that sets nothing.
func (c Config) FileKeys() []string { return c.fileKeys }

func setKeys(md toml.MetaData) []string {
	var out []string
	for _, k := range md.Keys() {
		if t := md.Type(k...); t != "Hash" && t != "ArrayHash" {
			out = append(out, k.String())
		}
	}
	return out
}

// elsewhere are the keys whose defaults take a start somewhere else: to
// another address, to the OS keychain (where none of the file backend's
// secrets are), to the real upstreams instead of a gateway or a test
// server.
var elsewhere = []string{"listen", "keychain.", "providers."}

// CutShort says why an edit of config.toml looks empty or cut short
// rather than meant, or "" when it does not. prev are the keys of the file
// the proxy runs on (FileKeys), next the edit's. The rule: the edit sets
// no key at all while prev set some, or it no longer sets a key of prev
// under listen, [keychain] or [providers.*]. Those keys are read only at
// start, so refusing such an edit costs nothing now, and it keeps a file
// truncated by a full disk or a crashed editor from being announced as a
// change "at the next start" (issue 43). A key set to another value is an
// edit, and so is a dropped key anywhere else: its default applies live
// and the reload names it. skipListen: --listen, not the file, says where
// the proxy listens.
func CutShort(prev, next []string, skipListen bool) string {
	if len(next) == 0 && len(prev) > 0 {
		return "config.toml sets no key now (empty or cut short?): restore it, or delete it and restart subpool for the commented defaults"
	}
	var gone []string
	for _, k := range prev {
		if slices.Contains(next, k) || skipListen && k == "listen" {
			continue
		}
		for _, e := range elsewhere {
			if k == e || strings.HasSuffix(e, ".") && strings.HasPrefix(k, e) {
				gone = append(gone, k)
				break
			}
		}
	}
	if len(gone) == 0 {
		return ""
	}
	named := strings.Join(gone[:min(len(gone), 3)], ", ")
	if len(gone) > 3 {
		named += fmt.Sprintf(" and %d more", len(gone)-3)
	}
	return "config.toml no longer sets " + named + " (cut short?): restore them, or restart subpool to start on their defaults"
}
