package app

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/subpool/subpool/service"
	"github.com/subpool/subpool/service/servicetest"
)

// serviceEnv points HOME, the config dir and SUBPOOL_HOME at a temporary
// directory, so that nothing a test resolves is the real user's.
func serviceEnv(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("AppData", filepath.Join(home, "AppData"))
	t.Setenv("SUBPOOL_HOME", "")
	return home
}

// fakeServiceSystem makes cmdService drive a fake service manager (and, on
// Windows, a fake Run key) for the rest of the test.
func fakeServiceSystem(t *testing.T, extra ...service.Option) *servicetest.System {
	t.Helper()
	sys := &servicetest.System{}
	runKey := svcRunKey{}
	serviceOptions = append([]service.Option{
		service.WithSystem(sys),
		service.WithUserManagerCheck(nil),
		service.WithProbe(func(string) bool { return false }),
		service.WithRunKey(runKey),
		service.WithTrayLauncher(func(string, []string) error { return errors.New("no tray in tests") }),
	}, extra...)
	t.Cleanup(func() { serviceOptions = nil })
	return sys
}

type svcRunKey map[string]string

func (k svcRunKey) Get(n string) (string, bool, error) { v, ok := k[n]; return v, ok, nil }
func (k svcRunKey) Set(n, v string) error              { k[n] = v; return nil }
func (k svcRunKey) Delete(n string) error              { delete(k, n); return nil }

func runService(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = cmdService(args, &out, &errb)
	return code, out.String(), errb.String()
}

// oneLine fails unless s is exactly one non-empty line with no Go panic in it.
func oneLine(t *testing.T, what, s string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") || len(strings.TrimSpace(s)) == 0 {
		t.Errorf("%s is not one line: %q", what, s)
	}
	if strings.Contains(s, "goroutine ") || strings.Contains(s, "panic:") {
		t.Errorf("%s holds a Go stack trace: %q", what, s)
	}
}

func TestServiceLifecycle(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the Run key flavour's lifecycle is tested in package service")
	}
	serviceEnv(t)
	sys := fakeServiceSystem(t)
	configDir, err := os.UserConfigDir()
	if err != nil {
		t.Fatal(err)
	}

	code, out, errs := runService("install")
	if code != 0 || errs != "" {
		t.Fatalf("install: exit %d, stderr %q", code, errs)
	}
	oneLine(t, "install output", out)
	if !strings.Contains(out, "installed the ") || !strings.Contains(out, "subpool service start") {
		t.Errorf("install output = %q", out)
	}
	c := sys.Config()
	wantArgs := []string{"serve", "--home", filepath.Join(configDir, "subpool"), "--listen", "127.0.0.1:8787"}
	if c == nil || !slices.Equal(c.Arguments, wantArgs) || !filepath.IsAbs(c.Executable) {
		t.Fatalf("library config = %+v, want arguments %q and an absolute binary", c, wantArgs)
	}

	code, out, _ = runService("status")
	if code != 0 {
		t.Fatalf("status: exit %d", code)
	}
	for _, want := range []string{"installed: yes", "running:   no", "address:   127.0.0.1:8787 (nothing answers there)", "logs:      "} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	for _, action := range []string{"start", "stop", "uninstall"} {
		code, out, errs := runService(action)
		if code != 0 || errs != "" {
			t.Fatalf("%s: exit %d, stderr %q", action, code, errs)
		}
		oneLine(t, action+" output", out)
	}
	if got, want := sys.Calls(), []string{"install", "start", "stop", "uninstall"}; !slices.Equal(got, want) {
		t.Errorf("service manager calls = %q, want %q", got, want)
	}

	code, out, _ = runService("uninstall")
	if code != 0 || !strings.Contains(out, "not installed") {
		t.Errorf("uninstall of nothing: exit %d, %q", code, out)
	}
	code, _, errs = runService("start")
	if code != 1 || !strings.Contains(errs, "subpool service install") {
		t.Errorf("start of nothing: exit %d, %q", code, errs)
	}
	oneLine(t, "start error", errs)
}

func TestServiceHomeAndListen(t *testing.T) {
	tests := []struct {
		name       string
		env        string // SUBPOOL_HOME
		config     string // config.toml in the resolved home
		args       []string
		wantHome   string // relative to the temp dir
		wantListen string
	}{
		{"flag beats env", "env-home", "", []string{"install", "--home", "flag-home"}, "flag-home", "127.0.0.1:8787"},
		{"flags before the action", "", "", []string{"--home", "flag-home", "--listen", "127.0.0.1:9000", "install"}, "flag-home", "127.0.0.1:9000"},
		{"env beats default", "env-home", "", []string{"install"}, "env-home", "127.0.0.1:8787"},
		{"listen from config.toml", "env-home", "listen = \"127.0.0.1:7000\"\n", []string{"install"}, "env-home", "127.0.0.1:7000"},
		{"listen flag beats config.toml", "env-home", "listen = \"127.0.0.1:7000\"\n", []string{"install", "--listen", "[::1]:7001"}, "env-home", "[::1]:7001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := serviceEnv(t)
			t.Chdir(tmp) // relative homes must come out absolute
			if tt.env != "" {
				t.Setenv("SUBPOOL_HOME", tt.env)
			}
			if tt.config != "" {
				if err := os.MkdirAll(filepath.Join(tmp, tt.wantHome), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(tmp, tt.wantHome, "config.toml"), []byte(tt.config), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			sys := fakeServiceSystem(t)
			if code, _, errs := runService(tt.args...); code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if runtime.GOOS == "windows" {
				return // the Run key runs the tray, which reads its own config
			}
			got := sys.Config().Arguments
			want := []string{"serve", "--home", filepath.Join(tmp, tt.wantHome), "--listen", tt.wantListen}
			if !slices.Equal(got, want) {
				t.Errorf("serve arguments = %q, want %q", got, want)
			}
		})
	}
}

func TestServiceTrayArgsFollowAnExplicitHome(t *testing.T) {
	serviceEnv(t)
	cfg, err := serviceConfig("", "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TrayArgs != nil {
		t.Errorf("default home: tray args %q, want none", cfg.TrayArgs)
	}
	home := filepath.Join(t.TempDir(), "elsewhere")
	t.Setenv("SUBPOOL_HOME", home)
	if cfg, _ = serviceConfig("", ""); !slices.Equal(cfg.TrayArgs, []string{"tray", "--home", home}) {
		t.Errorf("tray args %q: a login item has no $SUBPOOL_HOME, so the tray must be told", cfg.TrayArgs)
	}
}

func TestServiceUsage(t *testing.T) {
	serviceEnv(t)
	sys := fakeServiceSystem(t)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"install", "--help"}} {
		code, out, errs := runService(args...)
		if code != 0 || errs != "" || !strings.HasPrefix(out, "Usage: subpool service ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	for _, args := range [][]string{
		{},
		{"restart"},
		{"install", "now"},
		{"install", "--bogus"},
		{"install", "--home"},
		{"install", "--listen", "8787"},
	} {
		code, out, errs := runService(args...)
		if code != 2 || out != "" {
			t.Errorf("%q: exit %d, stdout %q; want exit 2 and nothing on stdout", args, code, out)
		}
		oneLine(t, "usage error", errs)
	}
	if calls := sys.Calls(); len(calls) != 0 {
		t.Errorf("bad usage reached the service manager: %q", calls)
	}
}

func TestServiceManagerFailureIsOneLine(t *testing.T) {
	serviceEnv(t)
	sys := fakeServiceSystem(t)
	sys.FailOn("install", errors.New("Failed to enable unit:\nUnit file subpool.service does not exist."))
	if runtime.GOOS == "windows" {
		t.Skip("no service manager call on Windows")
	}
	code, out, errs := runService("install")
	if code != 1 || out != "" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	oneLine(t, "error", errs)
	if !strings.HasPrefix(errs, "subpool service install: ") || !strings.Contains(errs, "does not exist") {
		t.Errorf("error = %q", errs)
	}
}

func TestServiceForcedNoUserManager(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux asks for a user session")
	}
	serviceEnv(t)
	sys := fakeServiceSystem(t, service.WithUserManagerCheck(func() error {
		return &service.NoUserManagerError{Missing: "no systemd user session (`systemctl --user`: Failed to connect to bus: No medium found)"}
	}))
	code, out, errs := runService("install")
	if code != 1 || out != "" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	oneLine(t, "error", errs)
	for _, want := range []string{"no systemd user session", "`subpool serve`", "autostart"} {
		if !strings.Contains(errs, want) {
			t.Errorf("error lacks %q: %s", want, errs)
		}
	}
	if calls := sys.Calls(); len(calls) != 0 {
		t.Errorf("the service manager was called anyway: %q", calls)
	}
}

// TestServiceInstallWithoutUserManager runs the real detection, with no fake:
// on a box with no systemd user session, install must refuse in one line and
// write nothing. Where a session exists it would really install, so it skips.
func TestServiceInstallWithoutUserManager(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("on " + runtime.GOOS + " a real install would succeed and touch this machine")
	}
	if err := service.CheckUserManager(); err == nil {
		t.Skip("this machine has a systemd user session; a real install would touch it")
	}
	home := serviceEnv(t)
	serviceOptions = nil

	code, out, errs := runService("install")
	if code != 1 || out != "" {
		t.Errorf("exit %d, stdout %q; want exit 1 and nothing on stdout", code, out)
	}
	oneLine(t, "error", errs)
	if !strings.HasPrefix(errs, "subpool service install: no per-user service manager: ") ||
		!strings.Contains(errs, "run `subpool serve` from your own autostart instead") {
		t.Errorf("error = %q", errs)
	}
	entries, _ := os.ReadDir(home)
	for _, e := range entries {
		if e.Name() == ".config" {
			t.Errorf("refused install still created %s", filepath.Join(home, ".config"))
		}
	}
}
