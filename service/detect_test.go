package service

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestCheckSystemdUser(t *testing.T) {
	exists := func(string) (os.FileInfo, error) { return nil, nil }
	missing := func(string) (os.FileInfo, error) { return nil, fs.ErrNotExist }
	found := func(string) (string, error) { return "/usr/bin/systemctl", nil }
	notFound := func(string) (string, error) { return "", errors.New("not found") }
	answers := func(string) error { return nil }
	noBus := func(string) error { return errors.New("Failed to connect to bus: No medium found") }
	mustNotAsk := func(string) error { t.Error("asked systemctl after an earlier check failed"); return nil }

	tests := []struct {
		name    string
		stat    func(string) (os.FileInfo, error)
		look    func(string) (string, error)
		ask     func(string) error
		missing string // "" = a user manager is there
	}{
		{"systemd user session", exists, found, answers, ""},
		// This machine's case: no systemd as PID 1, where kardianos/service
		// would fall through to SysV.
		{"no systemd", missing, found, mustNotAsk, "systemd is not running on this machine (no /run/systemd/system)"},
		{"no systemctl", exists, notFound, mustNotAsk, "systemctl is not installed"},
		{"no session bus", exists, found, noBus, "no systemd user session (`systemctl --user`: Failed to connect to bus: No medium found)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSystemdUser(tt.stat, tt.look, tt.ask)
			if tt.missing == "" {
				if err != nil {
					t.Errorf("check = %v, want nil", err)
				}
				return
			}
			var nu *NoUserManagerError
			if !errors.As(err, &nu) || nu.Missing != tt.missing {
				t.Errorf("check = %v, want missing %q", err, tt.missing)
			}
		})
	}
}

func TestCheckUserManagerOnThisHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		if err := CheckUserManager(); err != nil {
			t.Errorf("CheckUserManager on %s = %v, want nil", runtime.GOOS, err)
		}
		return
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here; the branch under test is a box without it")
	}
	err := CheckUserManager()
	var nu *NoUserManagerError
	if !errors.As(err, &nu) || !strings.Contains(nu.Missing, "/run/systemd/system") {
		t.Errorf("CheckUserManager = %v, want the missing /run/systemd/system named", err)
	}
}
