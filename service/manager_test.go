package service

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/subpool/subpool/service/servicetest"
)

// rig is one Manager on a fake service manager, with its files in a
// temporary home.
type rig struct {
	cfg       Config
	sys       *servicetest.System
	runKey    mapRunKey
	answering bool     // what the probe says
	trays     []string // tray launches (Windows)
	m         *Manager
}

func newRig(t *testing.T, goos string) *rig {
	t.Helper()
	home := t.TempDir()
	r := &rig{sys: &servicetest.System{}, runKey: mapRunKey{}}
	r.cfg = Config{
		Executable: "/usr/local/bin/subpool",
		Home:       filepath.Join(home, ".config", "subpool"),
		Listen:     "127.0.0.1:8787",
		HomeDir:    home,
	}
	if goos == "windows" {
		r.cfg.Executable = `C:\Program Files\subpool\subpool.exe`
		r.cfg.Home = `C:\Users\me\AppData\Roaming\subpool`
		r.cfg.TrayArgs = []string{"tray", "--home", r.cfg.Home}
	}
	m, err := NewManager(r.cfg, r.opts(goos)...)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	r.m = m
	return r
}

func (r *rig) opts(goos string) []Option {
	return []Option{
		withGOOS(goos),
		WithSystem(r.sys),
		WithUserManagerCheck(nil),
		WithProbe(func(string) bool { return r.answering }),
		WithRunKey(r.runKey),
		WithTrayLauncher(func(exe string, args []string) error {
			r.trays = append(r.trays, strings.Join(append([]string{exe}, args...), " "))
			return nil
		}),
	}
}

func (r *rig) wantCalls(t *testing.T, want ...string) {
	t.Helper()
	if got := r.sys.Calls(); !slices.Equal(got, want) {
		t.Errorf("service manager calls = %q, want %q", got, want)
	}
}

func (r *rig) wantState(t *testing.T, installed, running bool) {
	t.Helper()
	if i, rn := r.sys.State(); i != installed || rn != running {
		t.Errorf("service installed=%v running=%v, want %v %v", i, rn, installed, running)
	}
}

type mapRunKey map[string]string

func (k mapRunKey) Get(name string) (string, bool, error) { v, ok := k[name]; return v, ok, nil }
func (k mapRunKey) Set(name, value string) error          { k[name] = value; return nil }
func (k mapRunKey) Delete(name string) error              { delete(k, name); return nil }

func TestInstallHandsOurUnitToTheLibrary(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			r := newRig(t, goos)
			if err := r.m.Install(); err != nil {
				t.Fatal(err)
			}
			// Installing must not start: the tray that asked already has a
			// proxy on the address.
			r.wantCalls(t, "install")
			r.wantState(t, true, false)

			c := r.sys.Config()
			wantCfg := r.cfg
			wantCfg.Name = "subpool"
			if c.Name != "subpool" || c.Executable != r.cfg.Executable {
				t.Errorf("library got Name=%q Executable=%q", c.Name, c.Executable)
			}
			wantArgs := []string{"serve", "--home", r.cfg.Home, "--listen", "127.0.0.1:8787"}
			if !slices.Equal(c.Arguments, wantArgs) {
				t.Errorf("Arguments = %q, want %q", c.Arguments, wantArgs)
			}
			if c.Option["UserService"] != true {
				t.Error("UserService is not set: the library would install a system service")
			}
			if c.Option["SystemdScript"] != RenderSystemdUnit(wantCfg) {
				t.Errorf("SystemdScript is not our unit:\n%v", c.Option["SystemdScript"])
			}
			if c.Option["LaunchdConfig"] != RenderLaunchAgent(wantCfg) {
				t.Errorf("LaunchdConfig is not our plist:\n%v", c.Option["LaunchdConfig"])
			}
			logDir := filepath.Join(r.cfg.HomeDir, "Library", "Logs", "subpool")
			if _, err := os.Stat(logDir); (err == nil) != (goos == "darwin") {
				t.Errorf("log dir %s: stat err %v; launchd needs it on macOS and nothing else does", logDir, err)
			}
		})
	}
}

func TestInstallAgainRewrites(t *testing.T) {
	t.Run("running service is restarted onto the new unit", func(t *testing.T) {
		r := newRig(t, "linux")
		r.sys.SetState(true, true)
		if err := r.m.Install(); err != nil {
			t.Fatal(err)
		}
		r.wantCalls(t, "stop", "uninstall", "install", "start")
		r.wantState(t, true, true)
	})
	t.Run("stopped service stays stopped", func(t *testing.T) {
		r := newRig(t, "linux")
		r.sys.SetState(true, false)
		if err := r.m.Install(); err != nil {
			t.Fatal(err)
		}
		r.wantCalls(t, "uninstall", "install")
		r.wantState(t, true, false)
	})
}

func TestUninstall(t *testing.T) {
	r := newRig(t, "linux")
	if err := r.m.Uninstall(); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("Uninstall of nothing = %v, want ErrNotInstalled", err)
	}
	r.wantCalls(t)

	r.sys.SetState(true, true)
	if err := r.m.Uninstall(); err != nil {
		t.Fatal(err)
	}
	// systemd keeps a process running after its unit is removed; stopping
	// first leaves nothing behind.
	r.wantCalls(t, "stop", "uninstall")
	r.wantState(t, false, false)
}

func TestStartStop(t *testing.T) {
	r := newRig(t, "linux")
	if err := r.m.Start(); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Start before install = %v, want ErrNotInstalled", err)
	}
	if err := r.m.Stop(); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Stop before install = %v, want ErrNotInstalled", err)
	}
	r.wantCalls(t)

	r.sys.SetState(true, false)
	for range 2 {
		if err := r.m.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := r.m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	// The second of each is a no-op: launchctl errors on loading a loaded job.
	r.wantCalls(t, "start", "stop")
	r.wantState(t, true, false)
}

func TestDarwinStartUnloadsFirst(t *testing.T) {
	// A loaded agent whose proxy exited 0 has no process; `launchctl load`
	// would refuse it as already loaded.
	r := newRig(t, "darwin")
	r.sys.SetState(true, false)
	if err := r.m.Start(); err != nil {
		t.Fatal(err)
	}
	r.wantCalls(t, "stop", "start")
	r.wantState(t, true, true)
}

func TestManagerErrorsSayWhatFailed(t *testing.T) {
	r := newRig(t, "linux")
	r.sys.FailOn("install", errors.New("permission denied"))
	err := r.m.Install()
	if err == nil || err.Error() != "installing the systemd user unit: permission denied" {
		t.Errorf("Install error = %v", err)
	}

	if _, lookErr := exec.LookPath("false"); lookErr != nil {
		t.Skip("no `false` to produce a real exit status")
	}
	exitErr := exec.Command("false").Run()
	r = newRig(t, "linux")
	r.sys.SetState(true, false)
	r.sys.FailOn("start", exitErr)
	err = r.m.Start()
	if err == nil || !strings.Contains(err.Error(), "`systemctl --user status subpool` says why") {
		t.Errorf("a bare exit status gets no pointer to the reason: %v", err)
	}
}

func TestStatus(t *testing.T) {
	t.Run("nothing installed", func(t *testing.T) {
		r := newRig(t, "linux")
		rep, err := r.m.Status()
		if err != nil {
			t.Fatal(err)
		}
		unit := filepath.Join(r.cfg.HomeDir, ".config", "systemd", "user", "subpool.service")
		want := "installed: no (systemd user unit " + unit + ")\n" +
			"running:   no\n" +
			"address:   127.0.0.1:8787 (nothing answers there)\n" +
			"logs:      journalctl --user -u subpool\n"
		if got := rep.String(); got != want {
			t.Errorf("status:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("installed and answering", func(t *testing.T) {
		r := newRig(t, "linux")
		r.sys.SetState(true, true)
		r.answering = true
		rep, err := r.m.Status()
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Installed || !rep.Running || !rep.Answering || rep.Note != "" {
			t.Errorf("report = %+v", rep)
		}
	})
	t.Run("someone else on the address", func(t *testing.T) {
		r := newRig(t, "linux")
		r.answering = true
		rep, _ := r.m.Status()
		if rep.Running || !strings.Contains(rep.Note, "something else answers") {
			t.Errorf("report = %+v", rep)
		}
	})
	t.Run("address comes from the installed unit", func(t *testing.T) {
		r := newRig(t, "linux")
		installed := r.cfg
		installed.Name, installed.Listen = "subpool", "127.0.0.1:9999"
		writeFile(t, filepath.Join(r.cfg.HomeDir, ".config", "systemd", "user", "subpool.service"), RenderSystemdUnit(installed))
		r.sys.SetState(true, true)
		var probed string
		m, err := NewManager(r.cfg, append(r.opts("linux"), WithProbe(func(a string) bool { probed = a; return true }))...)
		if err != nil {
			t.Fatal(err)
		}
		rep, _ := m.Status()
		if rep.Address != "127.0.0.1:9999" || probed != "127.0.0.1:9999" {
			t.Errorf("address %s, probed %s; the installed unit listens on 127.0.0.1:9999", rep.Address, probed)
		}
		if !strings.Contains(rep.Note, "subpool service install") {
			t.Errorf("no hint that the unit differs: %q", rep.Note)
		}
	})
	t.Run("failed unit", func(t *testing.T) {
		r := newRig(t, "linux")
		installed := r.cfg
		installed.Name = "subpool"
		writeFile(t, filepath.Join(r.cfg.HomeDir, ".config", "systemd", "user", "subpool.service"), RenderSystemdUnit(installed))
		r.sys.FailOn("status", errors.New("service in failed state"))
		rep, _ := r.m.Status()
		if !rep.Installed || rep.Running || rep.Note != "service manager: service in failed state" {
			t.Errorf("report = %+v", rep)
		}
	})
	t.Run("darwin", func(t *testing.T) {
		r := newRig(t, "darwin")
		rep, _ := r.m.Status()
		if want := filepath.Join(r.cfg.HomeDir, "Library", "Logs", "subpool", "serve.log"); rep.LogLocation != want {
			t.Errorf("logs at %s, want %s", rep.LogLocation, want)
		}
		if want := "LaunchAgent " + filepath.Join(r.cfg.HomeDir, "Library", "LaunchAgents", "subpool.plist"); rep.Where != want {
			t.Errorf("where = %s, want %s", rep.Where, want)
		}
	})
}

func TestWindowsRunKey(t *testing.T) {
	r := newRig(t, "windows")
	if on, _ := r.m.StartAtLogin(); on {
		t.Fatal("start at login before anything was set")
	}
	if err := r.m.Install(); err != nil {
		t.Fatal(err)
	}
	want := `"C:\Program Files\subpool\subpool.exe" tray --home C:\Users\me\AppData\Roaming\subpool`
	if r.runKey["subpool"] != want {
		t.Errorf("Run key value = %q, want %q", r.runKey["subpool"], want)
	}
	r.wantCalls(t) // no kardianos service on Windows: it would need the SCM and admin rights

	rep, err := r.m.Status()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Installed || rep.Running || !strings.Contains(rep.Where, `HKCU\Software\Microsoft\Windows\CurrentVersion\Run\subpool`) ||
		!strings.Contains(rep.Note, "no per-user services") {
		t.Errorf("report = %+v", rep)
	}

	if err := r.m.Start(); err != nil {
		t.Fatal(err)
	}
	r.answering = true
	if err := r.m.Start(); err != nil {
		t.Fatal(err)
	}
	if len(r.trays) != 1 || r.trays[0] != `C:\Program Files\subpool\subpool.exe tray --home C:\Users\me\AppData\Roaming\subpool` {
		t.Errorf("tray launches = %q, want one (none once something answers)", r.trays)
	}
	if rep, _ := r.m.Status(); !rep.Running {
		t.Error("a proxy answers but status says not running")
	}
	if err := r.m.Stop(); !errors.Is(err, ErrStopOnWindows) {
		t.Errorf("Stop = %v, want ErrStopOnWindows", err)
	}

	r.runKey["subpool"] = `"D:\old\subpool.exe"`
	if rep, _ := r.m.Status(); !strings.Contains(rep.Note, `D:\old\subpool.exe`) {
		t.Errorf("a stale login item goes unmentioned: %q", rep.Note)
	}

	if err := r.m.Uninstall(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.runKey["subpool"]; ok {
		t.Error("Run key value survived uninstall")
	}
	if err := r.m.Uninstall(); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("second Uninstall = %v, want ErrNotInstalled", err)
	}
}

func TestStartAtLoginRoundTrip(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			r := newRig(t, goos)
			on, err := StartAtLogin(r.cfg, r.opts(goos)...)
			if err != nil || on {
				t.Fatalf("StartAtLogin = %v, %v before anything was set", on, err)
			}

			for range 2 { // the second is a no-op
				if err := SetStartAtLogin(r.cfg, true, r.opts(goos)...); err != nil {
					t.Fatal(err)
				}
			}
			if on, err := StartAtLogin(r.cfg, r.opts(goos)...); err != nil || !on {
				t.Fatalf("StartAtLogin = %v, %v after turning it on", on, err)
			}
			cfg := r.cfg
			cfg.Name = "subpool"
			switch goos {
			case "linux":
				r.wantCalls(t, "install")
				wantFile(t, filepath.Join(r.cfg.HomeDir, ".config", "autostart", "subpool.desktop"), RenderXDGAutostart(cfg))
			case "darwin":
				r.wantCalls(t, "install")
				wantFile(t, filepath.Join(r.cfg.HomeDir, "Library", "LaunchAgents", "subpool.tray.plist"), RenderTrayLaunchAgent(cfg))
			case "windows":
				if r.runKey["subpool"] != RunKeyValue(cfg) {
					t.Errorf("Run key = %q", r.runKey["subpool"])
				}
			}

			if err := SetStartAtLogin(r.cfg, false, r.opts(goos)...); err != nil {
				t.Fatal(err)
			}
			if on, err := StartAtLogin(r.cfg, r.opts(goos)...); err != nil || on {
				t.Fatalf("StartAtLogin = %v, %v after turning it off", on, err)
			}
			if goos != "windows" {
				r.wantCalls(t, "install", "uninstall")
				r.wantState(t, false, false)
				for _, dir := range []string{".config/autostart", "Library/LaunchAgents"} {
					entries, _ := os.ReadDir(filepath.Join(r.cfg.HomeDir, dir))
					if len(entries) != 0 {
						t.Errorf("%s still holds %v", dir, entries)
					}
				}
			}
			if len(r.runKey) != 0 {
				t.Errorf("Run key still holds %v", r.runKey)
			}
		})
	}
}

func TestStartAtLoginKeepsARunningService(t *testing.T) {
	// The tray may be talking to this very service when the box is ticked.
	r := newRig(t, "linux")
	r.sys.SetState(true, true)
	if on, _ := r.m.StartAtLogin(); on {
		t.Error("on without the tray's own entry")
	}
	if err := r.m.SetStartAtLogin(true); err != nil {
		t.Fatal(err)
	}
	r.wantCalls(t)
	r.wantState(t, true, true)
	if on, _ := r.m.StartAtLogin(); !on {
		t.Error("off after turning on")
	}
}

func TestNoUserManager(t *testing.T) {
	r := newRig(t, "linux")
	missing := &NoUserManagerError{Missing: "systemd is not running on this machine (no /run/systemd/system)"}
	noSession := append(r.opts("linux"), WithUserManagerCheck(func() error { return missing }))

	_, err := NewManager(r.cfg, noSession...)
	var nu *NoUserManagerError
	if !errors.As(err, &nu) {
		t.Fatalf("NewManager = %v, want *NoUserManagerError", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "no /run/systemd/system") ||
		!strings.Contains(msg, "`subpool serve`") || !strings.Contains(msg, "~/.config/autostart") {
		t.Errorf("message is not one line naming what is missing and the alternative: %q", msg)
	}

	other := append(r.opts("linux"), WithUserManagerCheck(func() error { return errors.New("Failed to connect to bus") }))
	if _, err := NewManager(r.cfg, other...); !errors.As(err, &nu) || !strings.Contains(err.Error(), "Failed to connect to bus") {
		t.Errorf("a plain check error is not turned into the explanation: %v", err)
	}

	// Without a user session the tray hosts the proxy, so "start at login"
	// is its autostart entry alone, and the service manager is never asked.
	if err := SetStartAtLogin(r.cfg, true, noSession...); err != nil {
		t.Fatal(err)
	}
	if on, err := StartAtLogin(r.cfg, noSession...); err != nil || !on {
		t.Errorf("StartAtLogin = %v, %v", on, err)
	}
	entry := filepath.Join(r.cfg.HomeDir, ".config", "autostart", "subpool.desktop")
	if _, err := os.Stat(entry); err != nil {
		t.Error(err)
	}
	if err := SetStartAtLogin(r.cfg, false, noSession...); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("autostart entry survived: %v", err)
	}
	r.wantCalls(t)
}

func TestConfigChecks(t *testing.T) {
	tests := []struct {
		name   string
		goos   string
		change func(*Config)
		ok     bool
	}{
		{"valid", "linux", func(*Config) {}, true},
		{"relative home", "linux", func(c *Config) { c.Home = "subpool-home" }, false},
		{"no listen", "linux", func(c *Config) { c.Listen = "" }, false},
		{"listen without port", "linux", func(c *Config) { c.Listen = "127.0.0.1" }, false},
		{"newline in path", "linux", func(c *Config) { c.Home = "/home/me/a\nb" }, false},
		{"template braces", "linux", func(c *Config) { c.Home = "/home/{{Name}}" }, false},
		{"space in name", "linux", func(c *Config) { c.Name = "sub pool" }, false},
		{"windows drive path", "windows", func(c *Config) {
			c.Executable, c.Home = `C:\subpool\subpool.exe`, `C:\Users\me\subpool`
		}, true},
		{"unix path on windows", "windows", func(*Config) {}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, "linux")
			cfg := r.cfg
			cfg.TrayArgs = nil
			tt.change(&cfg)
			_, err := NewManager(cfg, r.opts(tt.goos)...)
			if (err == nil) != tt.ok {
				t.Errorf("NewManager error = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestForeignFlavourNeedsFakes(t *testing.T) {
	// Without fakes, another OS's flavour must refuse rather than drive this
	// host's service manager.
	other := "darwin"
	if runtime.GOOS == "darwin" {
		other = "linux"
	}
	cfg := Config{Executable: "/x/subpool", Home: "/x/home", Listen: "127.0.0.1:1", HomeDir: t.TempDir()}
	if _, err := NewManager(cfg, withGOOS(other), WithUserManagerCheck(nil)); err == nil {
		t.Errorf("NewManager for %s on %s found a service manager", other, runtime.GOOS)
	}
	if runtime.GOOS != "windows" {
		if _, err := NewManager(cfg, withGOOS("windows")); err == nil {
			t.Error("NewManager for windows found a Run key on a non-Windows host")
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s:\n%s\nwant:\n%s", path, got, want)
	}
}
