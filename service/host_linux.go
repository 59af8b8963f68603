package service

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"

	kservice "github.com/kardianos/service"
)

// CheckUserManager returns a *NoUserManagerError unless a systemd user
// session is reachable with `systemctl --user`, e.g. not as root over `su`,
// in a container, or on a distribution without systemd.
func CheckUserManager() error {
	return checkSystemdUser(os.Stat, exec.LookPath, askSystemdUser)
}

// askSystemdUser asks the user manager for something only it can answer.
// show-environment exits 0 whatever the session's state, where
// is-system-running also fails for a merely "degraded" one.
func askSystemdUser(systemctl string) error {
	// A wedged bus would otherwise hold the command for systemctl's own
	// 25-second D-Bus timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := exec.CommandContext(ctx, systemctl, "--user", "show-environment").Output()
	if err == nil {
		return nil
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if msg := strings.TrimSpace(string(exitErr.Stderr)); msg != "" {
			return errors.New(strings.SplitN(msg, "\n", 2)[0])
		}
	}
	return err
}

// hostSystem picks kardianos/service's systemd backend by name rather than
// trusting its detection, which falls through to SysV on boxes where the
// user check above already said no, and which the check has now vouched for.
func hostSystem() (kservice.System, error) {
	for _, s := range kservice.AvailableSystems() {
		if s.String() == "linux-systemd" {
			return s, nil
		}
	}
	return nil, errors.New("kardianos/service offers no linux-systemd backend")
}
