package service

import (
	"strings"
)

// The Render functions are pure: they depend on nothing but cfg, so each OS's
// files are tested on every OS. They assume cfg has passed NewManager's
// checks (absolute paths, no control characters).

// RenderSystemdUnit returns the systemd user unit for `subpool serve`.
//
// It is handed to kardianos/service as its SystemdScript because the
// library's own template is written for system units: WantedBy=multi-user.target
// (a target the user manager never reaches, so the unit would never start at
// login; kardianos/service PR #415), RestartSec=120 and an EnvironmentFile
// under /etc.
func RenderSystemdUnit(cfg Config) string {
	var b strings.Builder
	b.WriteString("# Written by `subpool service install`; `subpool service uninstall` removes it.\n")
	b.WriteString("[Unit]\n")
	b.WriteString("Description=subpool proxy: pools AI subscriptions and API keys\n")
	b.WriteString("# The keychain (Secret Service) is reached over the session bus.\n")
	b.WriteString("After=dbus.socket\n")
	b.WriteString("# If another proxy already holds the address, give up after a few tries\n")
	b.WriteString("# instead of restarting forever.\n")
	b.WriteString("StartLimitIntervalSec=60\n")
	b.WriteString("StartLimitBurst=5\n")
	b.WriteString("\n")
	b.WriteString("[Service]\n")
	b.WriteString("Type=simple\n")
	b.WriteString("ExecStart=" + systemdCommandLine(cfg.Executable, serveArgs(cfg)) + "\n")
	b.WriteString("Restart=on-failure\n")
	b.WriteString("RestartSec=" + restartSec + "\n")
	b.WriteString("# stdout and stderr go to the journal: " + journalCommand(cfg) + "\n")
	b.WriteString("\n")
	b.WriteString("[Install]\n")
	b.WriteString("WantedBy=default.target\n")
	return b.String()
}

// restartSec is short because the proxy is what every configured tool talks
// to: a crash should cost seconds, not the library's default two minutes.
const restartSec = "3"

// RenderLaunchAgent returns the LaunchAgent plist that runs `subpool serve`
// at login.
func RenderLaunchAgent(cfg Config) string {
	return launchAgent(cfg.Name, append([]string{cfg.Executable}, serveArgs(cfg)...), launchdLogPath(cfg, "serve.log"),
		// Restart on a crash but not after a clean exit, like Restart=on-failure
		// on Linux: a proxy that exits 0 was asked to.
		"\t<key>KeepAlive</key>\n\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
}

// RenderTrayLaunchAgent returns the LaunchAgent plist that opens the tray at
// login.
func RenderTrayLaunchAgent(cfg Config) string {
	return launchAgent(trayLabel(cfg), append([]string{cfg.Executable}, cfg.TrayArgs...), launchdLogPath(cfg, "tray.log"),
		// Quitting the tray is a choice; launchd must not bring it back.
		"\t<key>KeepAlive</key>\n\t<false/>\n",
		// Only in a graphical login: an ssh session has no menu bar to show it in.
		"\t<key>LimitLoadToSessionType</key>\n\t<string>Aqua</string>\n",
		"\t<key>ProcessType</key>\n\t<string>Interactive</string>\n")
}

// launchAgent is a LaunchAgent plist that runs args at load, with keys (each
// a rendered key and value) after RunAtLoad and both outputs going to log.
func launchAgent(label string, args []string, log string, keys ...string) string {
	log = plistEscape(log)
	var b strings.Builder
	b.WriteString(plistHeader)
	b.WriteString("\t<key>Label</key>\n\t<string>" + plistEscape(label) + "</string>\n")
	b.WriteString(plistArray(args))
	b.WriteString("\t<key>RunAtLoad</key>\n\t<true/>\n")
	for _, k := range keys {
		b.WriteString(k)
	}
	b.WriteString("\t<key>StandardOutPath</key>\n\t<string>" + log + "</string>\n")
	b.WriteString("\t<key>StandardErrorPath</key>\n\t<string>" + log + "</string>\n")
	b.WriteString(plistFooter)
	return b.String()
}

// RenderXDGAutostart returns the XDG autostart entry that opens the tray when
// the desktop session starts.
func RenderXDGAutostart(cfg Config) string {
	var b strings.Builder
	b.WriteString("# Written by subpool's \"Start at login\"; unticking it removes this file.\n")
	b.WriteString("[Desktop Entry]\n")
	b.WriteString("Type=Application\n")
	b.WriteString("Name=subpool\n")
	b.WriteString("Comment=Pools AI subscriptions and API keys behind one local proxy\n")
	b.WriteString("Exec=" + desktopExec(append([]string{cfg.Executable}, cfg.TrayArgs...)) + "\n")
	// The session skips the entry, instead of failing at every login, once
	// the binary is gone.
	b.WriteString("TryExec=" + desktopString(cfg.Executable) + "\n")
	b.WriteString("Terminal=false\n")
	b.WriteString("X-GNOME-Autostart-enabled=true\n")
	return b.String()
}

// RunKeyValue returns the command line stored in the Windows Run key: the
// tray, which runs the proxy in-process.
func RunKeyValue(cfg Config) string {
	// The program path is always quoted: an unquoted path with a space makes
	// Windows try "C:\Program" first.
	parts := []string{`"` + cfg.Executable + `"`}
	for _, a := range cfg.TrayArgs {
		parts = append(parts, windowsArg(a))
	}
	return strings.Join(parts, " ")
}

// serveArgs are the arguments of the service's `subpool serve`. --home and
// --listen are always explicit because a service manager starts the proxy
// with neither the user's shell environment ($SUBPOOL_HOME) nor a working
// directory that relative paths could mean.
func serveArgs(cfg Config) []string {
	return []string{"serve", "--home", cfg.Home, "--listen", cfg.Listen}
}

func journalCommand(cfg Config) string {
	return "journalctl --user -u " + cfg.Name
}

func trayLabel(cfg Config) string { return cfg.Name + ".tray" }

const plistHeader = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
`

const plistFooter = "</dict>\n</plist>\n"

func plistArray(args []string) string {
	var b strings.Builder
	b.WriteString("\t<key>ProgramArguments</key>\n\t<array>\n")
	for _, a := range args {
		b.WriteString("\t\t<string>" + plistEscape(a) + "</string>\n")
	}
	b.WriteString("\t</array>\n")
	return b.String()
}

var plistEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&quot;", `'`, "&apos;")

func plistEscape(s string) string { return plistEscaper.Replace(s) }

// systemdCommandLine quotes each word the way systemd's ExecStart= parser
// reads it back. "%" (specifiers) and "$" (environment expansion) are
// doubled everywhere, quoted or not, because systemd expands both inside
// quotes too.
func systemdCommandLine(exe string, args []string) string {
	words := make([]string, 0, 1+len(args))
	for _, w := range append([]string{exe}, args...) {
		w = strings.NewReplacer("%", "%%", "$", "$$").Replace(w)
		if needsQuote(w) {
			w = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(w) + `"`
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// needsQuote reports whether w holds anything systemd would not read
// literally in an unquoted word; plain paths stay unquoted and readable.
func needsQuote(w string) bool {
	if w == "" {
		return true
	}
	for _, r := range w {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("_-./:,+=@%$", r):
		default:
			return true
		}
	}
	return false
}

// desktopExec builds an Exec= value by the Desktop Entry spec: an argument
// with a reserved character is double-quoted with `"`, "`", "$" and "\"
// backslash-escaped; "%" is doubled (field codes); then the whole value gets
// the string-level escaping, which is why a literal backslash ends up as four.
func desktopExec(args []string) string {
	words := make([]string, 0, len(args))
	for _, a := range args {
		a = strings.ReplaceAll(a, "%", "%%")
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\><~|&;$*?#()`") {
			a = `"` + strings.NewReplacer(`"`, `\"`, "`", "\\`", `$`, `\$`, `\`, `\\`).Replace(a) + `"`
		}
		words = append(words, a)
	}
	return desktopString(strings.Join(words, " "))
}

// desktopString applies the Desktop Entry escaping for values of type string.
func desktopString(s string) string {
	return strings.ReplaceAll(s, `\`, `\\`)
}

// windowsArg quotes one argument so that CommandLineToArgvW, which the Go
// runtime and most programs use, reads it back unchanged: backslashes are
// literal except before a quote, where they must be doubled.
func windowsArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, 2*slashes+1))
			b.WriteByte('"')
			slashes = 0
		default:
			b.WriteString(strings.Repeat(`\`, slashes))
			b.WriteByte(c)
			slashes = 0
		}
	}
	b.WriteString(strings.Repeat(`\`, 2*slashes))
	b.WriteByte('"')
	return b.String()
}
