//go:build !wayland

package app

// waylandTray: GLFW (under Fyne) speaks X11 unless built with -tags wayland.
const waylandTray = false
