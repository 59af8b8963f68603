package service

import (
	"errors"

	kservice "github.com/kardianos/service"
)

// CheckUserManager returns nil: launchd is every macOS user's service manager.
func CheckUserManager() error { return nil }

func hostSystem() (kservice.System, error) {
	if s := kservice.ChosenSystem(); s != nil {
		return s, nil
	}
	return nil, errors.New("kardianos/service found no launchd")
}
