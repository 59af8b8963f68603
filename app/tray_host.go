package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	dbus "github.com/godbus/dbus/v5"
)

// On Linux and the BSDs the tray icon is a StatusNotifierItem: it shows
// only where a StatusNotifier host (the desktop's panel) has registered
// with org.kde.StatusNotifierWatcher. GNOME as shipped has none, nor do
// many tiling window managers; there fyne.io/systray only logs "failed to
// register" and nothing appears (issue 42). So the tray asks the session
// bus first, and opens its panel as a window when nobody would show the
// icon.

const (
	snWatcher     = "org.kde.StatusNotifierWatcher"
	snWatcherPath = "/StatusNotifierWatcher"
)

// trayHostAnswer is what the session bus said about a StatusNotifier host.
type trayHostAnswer struct {
	busErr error // no session bus could be reached
	owned  bool  // someone owns org.kde.StatusNotifierWatcher
	// hostErr is set when the watcher's IsStatusNotifierHostRegistered
	// could not be read; hostRegistered is its value otherwise.
	hostErr        error
	hostRegistered bool
}

// trayHostAdvice is what a person without a tray icon can do.
const trayHostAdvice = "On GNOME, add the \"AppIndicator and KStatusNotifierItem Support\" extension; " +
	"KDE, XFCE, Cinnamon, MATE, Budgie, LXQt and waybar show it as they are."

// noTrayHost says why no tray icon will show here, or "" when a host will
// show it. Only Linux and the BSDs can lack one.
func noTrayHost(goos string, a trayHostAnswer) string {
	switch goos {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
	default:
		return ""
	}
	switch {
	case a.busErr != nil:
		return fmt.Sprintf("No tray icon: there is no D-Bus session bus (%v), so no desktop panel can show one.", a.busErr)
	case !a.owned:
		return "No tray icon: this desktop has no StatusNotifier host (nobody owns " + snWatcher + ")."
	case a.hostErr == nil && !a.hostRegistered:
		return "No tray icon: " + snWatcher + " runs, but no panel has registered with it to show icons."
	}
	// A watcher whose property cannot be read is taken at its word: most
	// watchers are their desktop's own panel.
	return ""
}

// askTrayHost asks the session bus about a StatusNotifier host. It never
// autolaunches a bus (godbus would spawn dbus-launch when none is known).
func askTrayHost() trayHostAnswer {
	if !sessionBusKnown() {
		return trayHostAnswer{busErr: errors.New("DBUS_SESSION_BUS_ADDRESS is unset")}
	}
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return trayHostAnswer{busErr: err}
	}
	defer conn.Close()
	var owned bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, snWatcher).Store(&owned); err != nil {
		return trayHostAnswer{busErr: err}
	}
	a := trayHostAnswer{owned: owned}
	if owned {
		v, err := conn.Object(snWatcher, snWatcherPath).GetProperty(snWatcher + ".IsStatusNotifierHostRegistered")
		a.hostErr = err
		if err == nil {
			a.hostRegistered, _ = v.Value().(bool)
		}
	}
	return a
}

// sessionBusKnown: the environment names a session bus, or systemd's user
// bus socket exists.
func sessionBusKnown() bool {
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return true
	}
	_, err := os.Stat(filepath.Join("/run/user", strconv.Itoa(os.Getuid()), "bus"))
	return err == nil
}

// trayHostProblem is noTrayHost for this machine.
func trayHostProblem() string { return noTrayHost(runtime.GOOS, askTrayHost()) }
