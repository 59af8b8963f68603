package service

import (
	"os"
	"strings"
)

// checkSystemdUser finds a systemd user manager that `systemctl --user` can
// reach, or says in a few words what is missing. It takes its view of the
// machine as functions so that every branch is tested on any host.
//
// kardianos/service would pick its SysV backend on a box without systemd and
// then either refuse user services or, as root, write /etc/init.d; this check
// runs first so neither happens.
func checkSystemdUser(stat func(string) (os.FileInfo, error), lookPath func(string) (string, error), askUser func(systemctl string) error) error {
	// systemd creates this directory when it boots as PID 1 (sd_booted).
	if _, err := stat("/run/systemd/system"); err != nil {
		return &NoUserManagerError{Missing: "systemd is not running on this machine (no /run/systemd/system)"}
	}
	systemctl, err := lookPath("systemctl")
	if err != nil {
		return &NoUserManagerError{Missing: "systemctl is not installed"}
	}
	if err := askUser(systemctl); err != nil {
		why := strings.Join(strings.Fields(err.Error()), " ")
		return &NoUserManagerError{Missing: "no systemd user session (`systemctl --user`: " + why + ")"}
	}
	return nil
}
