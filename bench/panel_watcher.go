package main

import (
	dbus "github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
)

// watcher is a StatusNotifierWatcher with a host registered, as a desktop
// panel that shows tray icons provides one: the tray then registers its
// icon and keeps its panel hidden, as it runs on KDE or XFCE.
type watcher struct{}

const watcherName = "org.kde.StatusNotifierWatcher"

func (w *watcher) RegisterStatusNotifierItem(string) *dbus.Error { return nil }

func (w *watcher) RegisterStatusNotifierHost(string) *dbus.Error { return nil }

// serveWatcher owns org.kde.StatusNotifierWatcher on the bus at addr until
// stop.
func serveWatcher(addr string) (stop func(), err error) {
	conn, err := dbus.Connect(addr)
	if err != nil {
		return nil, err
	}
	w := &watcher{}
	if err := conn.Export(w, "/StatusNotifierWatcher", watcherName); err != nil {
		conn.Close()
		return nil, err
	}
	props := prop.Map{watcherName: {
		"IsStatusNotifierHostRegistered": {Value: true},
		"RegisteredStatusNotifierItems":  {Value: []string{}},
		"ProtocolVersion":                {Value: int32(0)},
	}}
	if _, err := prop.Export(conn, "/StatusNotifierWatcher", props); err != nil {
		conn.Close()
		return nil, err
	}
	if _, err := conn.RequestName(watcherName, dbus.NameFlagDoNotQueue); err != nil {
		conn.Close()
		return nil, err
	}
	return func() { conn.Close() }, nil
}
