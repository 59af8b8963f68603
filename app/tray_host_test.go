package app

import (
	"errors"
	"strings"
	"testing"
)

// The decision over what the session bus answered: one row per answer a
// desktop gives (GNOME as shipped owns no watcher; KDE owns it with its
// panel registered).
func TestNoTrayHost(t *testing.T) {
	for _, tc := range []struct {
		name string
		goos string
		a    trayHostAnswer
		want string // a part of the reason; "" when the icon shows
	}{
		{"KDE, XFCE, waybar: a watcher with a host", "linux", trayHostAnswer{owned: true, hostRegistered: true}, ""},
		{"GNOME without the extension: no watcher", "linux", trayHostAnswer{}, "has no StatusNotifier host"},
		{"a watcher nobody shows icons for", "linux", trayHostAnswer{owned: true}, "no panel has registered"},
		{"a watcher whose property cannot be read", "freebsd", trayHostAnswer{owned: true, hostErr: errors.New("no such property")}, ""},
		{"no session bus", "linux", trayHostAnswer{busErr: errors.New("DBUS_SESSION_BUS_ADDRESS is unset")}, "no D-Bus session bus"},
		{"macOS has its menu bar", "darwin", trayHostAnswer{}, ""},
		{"Windows has its notification area", "windows", trayHostAnswer{busErr: errors.New("x")}, ""},
	} {
		got := noTrayHost(tc.goos, tc.a)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
