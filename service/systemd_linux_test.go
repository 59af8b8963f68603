package service

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kservice "github.com/kardianos/service"
)

// TestRealSystemdBackend drives kardianos/service's own systemd backend with a
// stand-in systemctl on PATH and HOME in a temporary directory: it shows that
// our unit survives the library's template engine byte for byte, lands in
// ~/.config/systemd/user, and that every systemctl call carries --user.
func TestRealSystemdBackend(t *testing.T) {
	home := t.TempDir()
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	state := filepath.Join(t.TempDir(), "state")
	unit := filepath.Join(home, ".config", "systemd", "user", "subpool.service")
	standInSystemctl(t, home, bin, calls, state, unit)

	sys, err := hostSystem()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Executable: "/opt/sub pool/subpool", Home: "/home/me/100% home", Listen: "127.0.0.1:8787", HomeDir: home}
	m, err := NewManager(cfg, WithSystem(userServicesOnly{t, sys}), WithUserManagerCheck(nil), WithProbe(func(string) bool { return false }))
	if err != nil {
		t.Fatal(err)
	}
	mutating := func() []string {
		data, _ := os.ReadFile(calls)
		var out []string
		for l := range strings.Lines(string(data)) {
			l = strings.TrimSpace(l)
			if !strings.HasPrefix(l, "is-active") && !strings.HasPrefix(l, "list-unit-files") {
				out = append(out, l)
			}
		}
		return out
	}

	if err := m.Install(); err != nil {
		t.Fatal(err)
	}
	cfg.Name = "subpool"
	wantFile(t, unit, RenderSystemdUnit(cfg))
	if got, want := mutating(), []string{"enable --user subpool.service", "daemon-reload --user"}; !slices.Equal(got, want) {
		t.Errorf("install ran systemctl %q, want %q", got, want)
	}

	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	rep, err := m.Status()
	if err != nil || !rep.Installed || !rep.Running {
		t.Errorf("after start: %+v, %v", rep, err)
	}

	if err := m.Uninstall(); err != nil {
		t.Fatal(err)
	}
	want := []string{"enable --user subpool.service", "daemon-reload --user", "start --user subpool.service",
		"stop --user subpool.service", "disable --user subpool.service", "daemon-reload --user"}
	if got := mutating(); !slices.Equal(got, want) {
		t.Errorf("systemctl calls %q, want %q", got, want)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Errorf("unit survived uninstall: %v", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(readString(t, calls)), "\n") {
		if !strings.Contains(l, "--user") {
			t.Errorf("systemctl %s ran without --user: it would act on the system manager", l)
		}
	}
}

// standInSystemctl puts a systemctl alone on PATH (in bin) that logs
// its calls to calls and keeps the unit's state in state; HOME is home.
func standInSystemctl(t *testing.T, home, bin, calls, state, unit string) {
	t.Helper()
	// Shell builtins only: PATH holds nothing but this script.
	script := `#!/bin/sh
echo "$*" >> '` + calls + `'
s=stopped
[ -f '` + state + `' ] && read s < '` + state + `'
case "$1" in
is-active) if [ "$s" = running ]; then echo active; exit 0; fi; echo inactive; exit 3 ;;
list-unit-files) [ -f '` + unit + `' ] && echo "subpool.service enabled" ;;
start) echo running > '` + state + `' ;;
stop) echo stopped > '` + state + `' ;;
esac
exit 0
`
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("PATH", bin)
	if p, err := exec.LookPath("systemctl"); err != nil || p != filepath.Join(bin, "systemctl") {
		t.Fatalf("systemctl resolves to %q (%v), not the stand-in; refusing to go on", p, err)
	}
}

// userServicesOnly passes the real backend through only for user services:
// a system unit goes to /etc/systemd/system, which a test run as root would
// really write.
type userServicesOnly struct {
	t *testing.T
	kservice.System
}

func (u userServicesOnly) New(i kservice.Interface, c *kservice.Config) (kservice.Service, error) {
	if c.Option["UserService"] != true {
		u.t.Fatal("not a user service: refusing to let the library write system paths")
	}
	return u.System.New(i, c)
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
