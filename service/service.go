// Package service makes `subpool serve` a per-user login service and backs the
// tray's "Start at login".
//
// Linux: a systemd user unit; macOS: a LaunchAgent. Both go through
// kardianos/service with UserService and our own unit/plist, because the
// library's templates are written for system services (see
// RenderSystemdUnit). Windows has no per-user services and a service runs in
// session 0, where no tray can show, so there the login item is the tray
// itself, in the per-user Run key; the tray runs the proxy in-process.
//
// Nothing here needs root, and nothing falls back to a system-wide init
// script: a Linux box without a systemd user session gets NoUserManagerError.
package service

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	kservice "github.com/kardianos/service"

	"github.com/subpool/subpool/internal/atomicfile"
)

// Config says what the login entries run and where their files go.
type Config struct {
	// Name names the systemd unit (<Name>.service), the LaunchAgent labels
	// (<Name>, <Name>.tray), the autostart file and the Run key value.
	// Default "subpool".
	Name string
	// Executable is the absolute path of the subpool binary the entries run.
	// Default DefaultExecutable().
	Executable string
	// Home is what the service passes to `subpool serve --home`. Required,
	// absolute.
	Home string
	// Listen is what the service passes to `subpool serve --listen`, and the
	// address Status probes when nothing is installed yet. Required.
	Listen string
	// HomeDir is the user's home directory, under which the unit, plists,
	// autostart entry and macOS logs live. Default os.UserHomeDir(). Tests
	// point it at a temporary directory; leave it empty otherwise, because
	// kardianos/service writes the unit or serve plist under the real home
	// whatever this says.
	HomeDir string
	// TrayArgs are the arguments of the tray's login entry (Run key, XDG
	// autostart, tray LaunchAgent). Nil runs the bare binary, which is the
	// tray. Set it (e.g. "tray", "--home", DIR) when the tray runs with a
	// home other than the default, since a login item gets no shell
	// environment.
	TrayArgs []string
}

// ErrNotInstalled is returned by Uninstall, Start and Stop when there is
// nothing installed to act on.
var ErrNotInstalled = errors.New("not installed: run `subpool service install` first")

// ErrStopOnWindows is returned by Stop on Windows, where the proxy lives in
// the tray process and the tray is the only thing that should end it.
var ErrStopOnWindows = errors.New("on Windows the proxy runs inside the tray: quit subpool from its tray menu")

// NoUserManagerError means the machine has no per-user service manager to
// install into. Its message is one line that says what is missing and what to
// do instead.
type NoUserManagerError struct {
	Missing string // e.g. "systemd is not running on this machine (no /run/systemd/system)"
}

func (e *NoUserManagerError) Error() string {
	return "no per-user service manager: " + e.Missing +
		"; run `subpool serve` from your own autostart instead (e.g. ~/.config/autostart or your shell profile)"
}

// Report is what Status found. String renders it as a short block of lines.
type Report struct {
	Installed   bool
	Running     bool   // the service manager says the proxy process runs (Windows: something answers on Address)
	Answering   bool   // something accepted a TCP connection on Address
	Address     string // the installed service's --listen, else Config.Listen
	Where       string // what is (or would be) installed and where
	LogLocation string
	TrayEntry   string // the tray's own login entry, when present (Linux, macOS)
	Note        string
}

func (r Report) String() string {
	yes := func(v bool) string {
		if v {
			return "yes"
		}
		return "no"
	}
	answer := "nothing answers there"
	if r.Answering {
		answer = "answering"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "installed: %s (%s)\n", yes(r.Installed), r.Where)
	fmt.Fprintf(&b, "running:   %s\n", yes(r.Running))
	fmt.Fprintf(&b, "address:   %s (%s)\n", r.Address, answer)
	fmt.Fprintf(&b, "logs:      %s\n", r.LogLocation)
	if r.TrayEntry != "" {
		fmt.Fprintf(&b, "tray:      opens at login (%s)\n", r.TrayEntry)
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "note:      %s\n", r.Note)
	}
	return b.String()
}

// RunKey is the per-user Run key, HKCU\Software\Microsoft\Windows\CurrentVersion\Run.
// The real one exists only on Windows; tests supply a map.
type RunKey interface {
	Get(name string) (value string, ok bool, err error)
	Set(name, value string) error
	Delete(name string) error
}

// RunKeyPath is where Windows keeps per-user login items.
const RunKeyPath = `HKCU\Software\Microsoft\Windows\CurrentVersion\Run`

// Option replaces one of the Manager's ties to the real machine.
type Option func(*options)

type options struct {
	goos      string
	system    kservice.System
	check     func() error
	probe     func(addr string) bool
	runKey    RunKey
	startTray func(exe string, args []string) error
}

// WithSystem makes the Manager use s (for instance servicetest.System)
// instead of the machine's service manager.
func WithSystem(s kservice.System) Option { return func(o *options) { o.system = s } }

// WithUserManagerCheck replaces the Linux check for a systemd user session
// (CheckUserManager). A nil check skips it.
func WithUserManagerCheck(check func() error) Option { return func(o *options) { o.check = check } }

// WithProbe replaces the TCP dial Status uses to see whether something answers
// on the address.
func WithProbe(probe func(addr string) bool) Option { return func(o *options) { o.probe = probe } }

// WithRunKey replaces the Windows Run key.
func WithRunKey(k RunKey) Option { return func(o *options) { o.runKey = k } }

// WithTrayLauncher replaces how Start opens the tray on Windows.
func WithTrayLauncher(start func(exe string, args []string) error) Option {
	return func(o *options) { o.startTray = start }
}

// withGOOS lets tests drive another OS's flavour from any host; it needs
// WithSystem (or WithRunKey for windows) since the host has no such manager.
func withGOOS(goos string) Option { return func(o *options) { o.goos = goos } }

// Manager installs, removes, starts, stops and inspects the login service.
type Manager struct {
	cfg       Config
	goos      string
	svc       kservice.Service // linux, darwin
	runKey    RunKey           // windows
	probe     func(addr string) bool
	startTray func(exe string, args []string) error
	// noManager is set when Linux has no systemd user session; only the tray's
	// own autostart entry can then be managed (see StartAtLogin).
	noManager *NoUserManagerError
}

// NewManager checks cfg and finds the per-user service manager. On a Linux
// box without a systemd user session it returns a *NoUserManagerError.
func NewManager(cfg Config, opts ...Option) (*Manager, error) {
	m, err := newManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	if m.noManager != nil {
		return nil, m.noManager
	}
	return m, nil
}

func newManager(cfg Config, opts []Option) (*Manager, error) {
	o := options{
		goos:      runtime.GOOS,
		check:     CheckUserManager,
		probe:     dialProbe,
		runKey:    defaultRunKey(),
		startTray: defaultStartTray,
	}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(o.goos); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, goos: o.goos, probe: o.probe, runKey: o.runKey, startTray: o.startTray}

	switch o.goos {
	case "windows":
		if m.runKey == nil {
			return nil, errors.New("the Windows Run key can only be reached on Windows")
		}
		return m, nil
	case "linux":
		if o.check != nil {
			if err := o.check(); err != nil {
				var nu *NoUserManagerError
				if !errors.As(err, &nu) {
					nu = &NoUserManagerError{Missing: err.Error()}
				}
				m.noManager = nu
				return m, nil
			}
		}
	case "darwin": // launchd serves every user; nothing to check
	default:
		return nil, fmt.Errorf("no per-user login service on %s; run `subpool serve` from your own autostart instead", o.goos)
	}

	sys := o.system
	if sys == nil {
		if o.goos != runtime.GOOS {
			return nil, fmt.Errorf("no %s service manager on %s", o.goos, runtime.GOOS)
		}
		if sys, err = hostSystem(); err != nil {
			return nil, err
		}
	}
	m.svc, err = sys.New(noProgram{}, m.kserviceConfig())
	if err != nil {
		return nil, fmt.Errorf("service manager %s: %w", sys, err)
	}
	return m, nil
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Name == "" {
		cfg.Name = "subpool"
	}
	if cfg.Executable == "" {
		exe, err := DefaultExecutable()
		if err != nil {
			return cfg, fmt.Errorf("cannot find the subpool binary: %w", err)
		}
		cfg.Executable = exe
	}
	if cfg.HomeDir == "" {
		dir, err := os.UserHomeDir()
		if err != nil {
			return cfg, fmt.Errorf("cannot find your home directory: %w", err)
		}
		cfg.HomeDir = dir
	}
	return cfg, nil
}

func (cfg Config) validate(goos string) error {
	for _, c := range cfg.Name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-", c)) {
			return fmt.Errorf("service name %q: use letters, digits, '.', '_' or '-'", cfg.Name)
		}
	}
	if cfg.Listen == "" {
		return errors.New("no listen address for the service")
	}
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		return fmt.Errorf("listen address %q: %v", cfg.Listen, err)
	}
	fields := []struct{ what, v string }{{"binary path", cfg.Executable}, {"home", cfg.Home}}
	if goos != "windows" { // the Run key has no files
		fields = append(fields, struct{ what, v string }{"user home directory", cfg.HomeDir})
	}
	for _, f := range fields {
		if f.v == "" {
			return fmt.Errorf("no %s for the service", f.what)
		}
		if !isAbs(goos, f.v) {
			return fmt.Errorf("%s %q is not absolute; the service does not start where you are", f.what, f.v)
		}
	}
	for _, v := range append([]string{cfg.Executable, cfg.Home, cfg.Listen, cfg.HomeDir}, cfg.TrayArgs...) {
		if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return fmt.Errorf("%q contains a control character, which no unit, plist or login item can hold", v)
		}
		// kardianos/service runs our finished unit/plist through its template
		// engine, which would read "{{" as the start of an action.
		if strings.Contains(v, "{{") {
			return fmt.Errorf("%q contains \"{{\", which the service library would misread", v)
		}
	}
	return nil
}

// isAbs is filepath.IsAbs for goos, so that Windows paths are checked as
// Windows paths when tests drive that flavour from another host.
func isAbs(goos, p string) bool {
	if goos != "windows" {
		return strings.HasPrefix(p, "/")
	}
	if strings.HasPrefix(p, `\\`) {
		return true
	}
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') &&
		(p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
}

// DefaultExecutable returns the path the login entries should run: this
// binary, preferring the name it was started under when that leads to the
// same file. A package manager's stable symlink (Homebrew's
// /opt/homebrew/bin/subpool -> Cellar/<version>/...) survives an upgrade; the
// resolved, versioned target does not.
func DefaultExecutable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return "", err
	}
	invoked := os.Args[0]
	if !strings.ContainsRune(invoked, os.PathSeparator) && !strings.ContainsRune(invoked, '/') {
		if invoked, err = exec.LookPath(invoked); err != nil {
			return exe, nil
		}
	}
	invoked, err = filepath.Abs(invoked)
	if err != nil {
		return exe, nil
	}
	a, errA := os.Stat(invoked)
	b, errB := os.Stat(exe)
	if errA == nil && errB == nil && os.SameFile(a, b) {
		return invoked, nil
	}
	return exe, nil
}

// noProgram satisfies kardianos/service's Interface, which it needs even for
// install and control. Its Run is never called: the service manager execs
// `subpool serve`, which handles its own signals.
type noProgram struct{}

func (noProgram) Start(kservice.Service) error { return nil }
func (noProgram) Stop(kservice.Service) error  { return nil }

func (m *Manager) kserviceConfig() *kservice.Config {
	return &kservice.Config{
		Name:        m.cfg.Name,
		DisplayName: m.cfg.Name,
		Description: "subpool proxy: pools AI subscriptions and API keys",
		Executable:  m.cfg.Executable,
		Arguments:   serveArgs(m.cfg),
		Option: kservice.KeyValue{
			"UserService":   true,
			"SystemdScript": RenderSystemdUnit(m.cfg),
			"LaunchdConfig": RenderLaunchAgent(m.cfg),
			// Only read by the library's own plist template, which
			// LaunchdConfig replaces; set so that a reader of this config
			// sees the same intent.
			"RunAtLoad": true,
			"KeepAlive": true,
		},
	}
}

// Install writes and registers the service (Windows: the tray's login item).
// It does not start it: the tray toggling "Start at login" already has a
// proxy on the address. Installing again rewrites the entry, so a moved binary
// or a new --listen takes effect; a running service is restarted onto it.
func (m *Manager) Install() error {
	if m.noManager != nil {
		return m.noManager
	}
	if m.goos == "windows" {
		if err := m.runKey.Set(m.cfg.Name, RunKeyValue(m.cfg)); err != nil {
			return m.fail("writing", err)
		}
		return nil
	}
	if m.goos == "darwin" {
		// launchd opens StandardOutPath itself and does not create
		// directories: without this one the agent dies before subpool runs.
		if err := os.MkdirAll(launchdLogDir(m.cfg), 0o755); err != nil {
			return fmt.Errorf("creating the log directory: %w", err)
		}
	}
	s := m.serviceState()
	if s.installed {
		if s.running {
			if err := m.svc.Stop(); err != nil {
				return m.fail("stopping", err)
			}
		}
		if err := m.svc.Uninstall(); err != nil {
			return m.fail("replacing", err)
		}
	}
	if err := m.svc.Install(); err != nil {
		return m.fail("installing", err)
	}
	if s.running {
		if err := m.svc.Start(); err != nil {
			return m.fail("restarting", err)
		}
	}
	return nil
}

// runKeyPresent is "installed" on Windows: the tray's login item exists.
func (m *Manager) runKeyPresent() error {
	_, ok, err := m.runKey.Get(m.cfg.Name)
	if err != nil {
		return m.fail("reading", err)
	}
	if !ok {
		return ErrNotInstalled
	}
	return nil
}

// Uninstall stops the service if it runs and removes it (Windows: removes the
// login item and leaves the running tray alone). It returns ErrNotInstalled
// when there is nothing to remove.
func (m *Manager) Uninstall() error {
	if m.noManager != nil {
		return m.noManager
	}
	if m.goos == "windows" {
		if err := m.runKeyPresent(); err != nil {
			return err
		}
		if err := m.runKey.Delete(m.cfg.Name); err != nil {
			return m.fail("removing", err)
		}
		return nil
	}
	s := m.serviceState()
	if !s.installed {
		return ErrNotInstalled
	}
	// systemd would leave the process running with its unit gone, which
	// nothing could then stop by name.
	if s.running {
		if err := m.svc.Stop(); err != nil {
			return m.fail("stopping", err)
		}
	}
	if err := m.svc.Uninstall(); err != nil {
		return m.fail("removing", err)
	}
	return nil
}

// Start starts the installed service now; it is not an error if it already
// runs. On Windows it opens the tray unless something already answers on the
// address.
func (m *Manager) Start() error {
	if m.noManager != nil {
		return m.noManager
	}
	if m.goos == "windows" {
		if err := m.runKeyPresent(); err != nil {
			return err
		}
		if m.probe(m.cfg.Listen) {
			return nil
		}
		if m.startTray == nil {
			return errors.New("cannot open the tray from this host")
		}
		if err := m.startTray(m.cfg.Executable, m.cfg.TrayArgs); err != nil {
			return fmt.Errorf("opening the tray: %w", err)
		}
		return nil
	}
	s := m.serviceState()
	if !s.installed {
		return ErrNotInstalled
	}
	if s.running {
		return nil
	}
	if m.goos == "darwin" {
		// An agent whose proxy exited cleanly stays loaded with no process,
		// and `launchctl load` refuses a loaded job; unloading first makes
		// start work in both cases. The error only says it was not loaded.
		_ = m.svc.Stop()
	}
	if err := m.svc.Start(); err != nil {
		return m.fail("starting", err)
	}
	return nil
}

// Stop stops the service until the next login or Start; it is not an error
// if it is not running. On Windows it returns ErrStopOnWindows.
func (m *Manager) Stop() error {
	if m.noManager != nil {
		return m.noManager
	}
	if m.goos == "windows" {
		return ErrStopOnWindows
	}
	s := m.serviceState()
	if !s.installed {
		return ErrNotInstalled
	}
	if !s.running {
		return nil
	}
	if err := m.svc.Stop(); err != nil {
		return m.fail("stopping", err)
	}
	return nil
}

// Status reports whether the service is installed and running, the address
// it answers on and where its log goes.
func (m *Manager) Status() (Report, error) {
	r := Report{Address: m.cfg.Listen, Where: m.Where(), LogLocation: m.LogLocation()}
	if m.noManager != nil {
		return r, m.noManager
	}
	if m.goos == "windows" {
		v, ok, err := m.runKey.Get(m.cfg.Name)
		if err != nil {
			return Report{}, m.fail("reading", err)
		}
		r.Installed = ok
		r.Answering = m.probe(r.Address)
		r.Running = r.Answering
		r.Note = "Windows has no per-user services: the login item opens the tray, which runs the proxy in-process"
		if ok && v != RunKeyValue(m.cfg) {
			r.Note = fmt.Sprintf("the login item runs %s; `subpool service install` points it at this binary", v)
		}
		return r, nil
	}

	s := m.serviceState()
	r.Installed, r.Running, r.Note = s.installed, s.running, s.note
	if s.installed {
		if args, ok := m.installedArgs(); ok {
			// The installed unit, not this invocation's flags, decides where
			// the service listens.
			if addr := flagValue(args, "--listen"); addr != "" {
				r.Address = addr
			}
			if r.Note == "" && !slices.Equal(args, append([]string{m.cfg.Executable}, serveArgs(m.cfg)...)) {
				r.Note = "installed with another binary, --home or --listen than these; `subpool service install` rewrites it"
			}
		}
	}
	r.Answering = m.probe(r.Address)
	if r.Answering && !r.Running && r.Note == "" {
		r.Note = "something else answers on the address (the tray, or a `subpool serve` you started)"
	}
	if fileExists(m.trayEntryPath()) {
		r.TrayEntry = m.trayEntryPath()
	}
	return r, nil
}

// Where says what Install writes and where, e.g. "systemd user unit
// /home/me/.config/systemd/user/subpool.service".
func (m *Manager) Where() string {
	switch m.goos {
	case "windows":
		return "login item " + RunKeyPath + `\` + m.cfg.Name + ", which opens the tray"
	case "darwin":
		return "LaunchAgent " + m.servicePath()
	}
	return "systemd user unit " + m.servicePath()
}

// LogLocation says where the service's output goes.
func (m *Manager) LogLocation() string {
	switch m.goos {
	case "windows":
		return "shown by the tray, which runs the proxy in-process"
	case "darwin":
		return launchdLogPath(m.cfg, "serve.log")
	}
	return journalCommand(m.cfg)
}

// StartAtLogin reports whether the proxy and the tray both start at login.
func (m *Manager) StartAtLogin() (bool, error) {
	if m.goos == "windows" {
		_, ok, err := m.runKey.Get(m.cfg.Name)
		return ok, err
	}
	if m.noManager != nil {
		return fileExists(m.trayEntryPath()), nil
	}
	return m.serviceState().installed && fileExists(m.trayEntryPath()), nil
}

// SetStartAtLogin adds or removes everything that starts at login: on Linux
// and macOS the proxy service and the tray's own autostart entry, on Windows
// the tray's login item. Turning it on leaves an already installed service as
// it is, so a proxy the tray is talking to is not restarted; turning it off
// stops the service, so the tray must fall back to its in-process proxy.
func (m *Manager) SetStartAtLogin(on bool) error {
	if m.goos == "windows" {
		if on {
			return m.Install()
		}
		if err := m.Uninstall(); err != nil && !errors.Is(err, ErrNotInstalled) {
			return err
		}
		return nil
	}
	if on {
		// Without a user session the tray is the proxy's only host, as on
		// Windows, so its autostart entry alone is "start at login".
		if m.noManager == nil && !m.serviceState().installed {
			if err := m.Install(); err != nil {
				return err
			}
		}
		if err := writeFileAtomic(m.trayEntryPath(), m.trayEntry(), 0o644); err != nil {
			return fmt.Errorf("writing the tray's login entry: %w", err)
		}
		return nil
	}
	var msgs []string
	if err := os.Remove(m.trayEntryPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		msgs = append(msgs, "removing the tray's login entry: "+err.Error())
	}
	if m.noManager == nil {
		if err := m.Uninstall(); err != nil && !errors.Is(err, ErrNotInstalled) {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// StartAtLogin is Manager.StartAtLogin for cfg. On Linux without a systemd
// user session it reports the tray's autostart entry alone.
func StartAtLogin(cfg Config, opts ...Option) (bool, error) {
	m, err := newManager(cfg, opts)
	if err != nil {
		return false, err
	}
	return m.StartAtLogin()
}

// SetStartAtLogin is Manager.SetStartAtLogin for cfg. On Linux without a
// systemd user session it manages the tray's autostart entry alone: the tray
// then runs the proxy in-process, as it does on Windows.
func SetStartAtLogin(cfg Config, on bool, opts ...Option) error {
	m, err := newManager(cfg, opts)
	if err != nil {
		return err
	}
	return m.SetStartAtLogin(on)
}

type state struct {
	installed, running bool
	note               string
}

func (m *Manager) serviceState() state {
	st, err := m.svc.Status()
	switch {
	case err == nil && st == kservice.StatusRunning:
		return state{installed: true, running: true}
	case err == nil && st == kservice.StatusStopped:
		return state{installed: true}
	case errors.Is(err, kservice.ErrNotInstalled):
		return state{}
	}
	// systemd reports a crashed unit as an error ("service in failed state")
	// and launchctl failures come back as its stderr; the file on disk still
	// says whether it is installed.
	s := state{installed: fileExists(m.servicePath())}
	if err != nil {
		s.note = "service manager: " + strings.Join(strings.Fields(err.Error()), " ")
	}
	return s
}

// fail wraps a service-manager error with what was being done to what, and
// where to look when the manager itself gave no reason.
func (m *Manager) fail(doing string, err error) error {
	what := "systemd user unit"
	hint := " (`systemctl --user status " + m.cfg.Name + "` says why)"
	switch m.goos {
	case "darwin":
		what, hint = "LaunchAgent", " (see "+launchdLogPath(m.cfg, "serve.log")+")"
	case "windows":
		what, hint = "login item", ""
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		hint = ""
	}
	return fmt.Errorf("%s the %s: %w%s", doing, what, err, hint)
}

func (m *Manager) servicePath() string {
	if m.goos == "darwin" {
		return filepath.Join(m.cfg.HomeDir, "Library", "LaunchAgents", m.cfg.Name+".plist")
	}
	return filepath.Join(m.cfg.HomeDir, ".config", "systemd", "user", m.cfg.Name+".service")
}

func (m *Manager) trayEntryPath() string {
	if m.goos == "darwin" {
		return filepath.Join(m.cfg.HomeDir, "Library", "LaunchAgents", trayLabel(m.cfg)+".plist")
	}
	return filepath.Join(m.cfg.HomeDir, ".config", "autostart", m.cfg.Name+".desktop")
}

func (m *Manager) trayEntry() []byte {
	if m.goos == "darwin" {
		return []byte(RenderTrayLaunchAgent(m.cfg))
	}
	return []byte(RenderXDGAutostart(m.cfg))
}

func launchdLogDir(cfg Config) string {
	return filepath.Join(cfg.HomeDir, "Library", "Logs", cfg.Name)
}

func launchdLogPath(cfg Config, file string) string {
	return filepath.Join(launchdLogDir(cfg), file)
}

// dialProbe reports whether something accepts connections on addr. An
// unspecified host (":8787", "0.0.0.0:8787") is dialled on loopback, where
// such a listener also answers.
func dialProbe(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writeFileAtomic replaces path in one rename, so that a session starting
// mid-write never reads half an entry.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, perm)
}

func flagValue(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}
