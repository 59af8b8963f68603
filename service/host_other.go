//go:build !linux && !darwin && !windows

package service

import (
	"runtime"

	kservice "github.com/kardianos/service"
)

// CheckUserManager returns nil; NewManager refuses this OS on its own.
func CheckUserManager() error { return nil }

func hostSystem() (kservice.System, error) {
	return nil, &NoUserManagerError{Missing: "subpool knows no per-user service manager on " + runtime.GOOS}
}
