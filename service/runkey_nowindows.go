//go:build !windows

package service

// The Run key and a detached tray exist only on Windows; tests of the
// Windows flavour pass WithRunKey and WithTrayLauncher.
func defaultRunKey() RunKey { return nil }

var defaultStartTray func(exe string, args []string) error
