//go:build wayland

package app

// waylandTray: built with -tags wayland, GLFW opens Wayland, not X11.
const waylandTray = true
