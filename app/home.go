package app

import (
	"fmt"
	"os"
	"path/filepath"
)

// resolveHome: --home, else $SUBPOOL_HOME, else the OS config dir; created
// if missing.
func resolveHome(flagHome string) (string, error) {
	abs, err := homePath(flagHome)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("cannot create home %s: %v", abs, err)
	}
	return abs, nil
}

// homePath is resolveHome without creating anything.
func homePath(flagHome string) (string, error) {
	h := flagHome
	if h == "" {
		h = os.Getenv("SUBPOOL_HOME")
	}
	if h == "" {
		d, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("cannot find your config folder (%v); pass --home DIR", err)
		}
		h = filepath.Join(d, "subpool")
	}
	abs, err := filepath.Abs(h)
	if err != nil {
		return "", fmt.Errorf("home %q: %v", h, err)
	}
	return abs, nil
}
