package service

import (
	"bytes"
	"encoding/xml"
	"slices"
	"strings"
	"testing"
)

func unixConfig() Config {
	return Config{
		Name:       "subpool",
		Executable: "/usr/local/bin/subpool",
		Home:       "/home/me/.config/subpool",
		Listen:     "127.0.0.1:8787",
		HomeDir:    "/home/me",
	}
}

// lines returns the non-comment lines of a unit or desktop file.
func lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		l = strings.TrimSuffix(l, "\n")
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func TestSystemdUnit(t *testing.T) {
	unit := RenderSystemdUnit(unixConfig())
	got := lines(unit)
	for _, want := range []string{
		"ExecStart=/usr/local/bin/subpool serve --home /home/me/.config/subpool --listen 127.0.0.1:8787",
		"Restart=on-failure",
		"RestartSec=3",
		// A user manager never reaches multi-user.target: the library default
		// would never start at login.
		"WantedBy=default.target",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("unit lacks line %q:\n%s", want, unit)
		}
	}
	for _, bad := range []string{"multi-user.target", "RestartSec=120", "/etc/", "User=", "StandardOutput="} {
		if strings.Contains(unit, bad) {
			t.Errorf("unit contains %q, which a user unit logging to the journal must not:\n%s", bad, unit)
		}
	}
	if !strings.Contains(unit, "journalctl --user -u subpool") {
		t.Errorf("unit does not say where its log is:\n%s", unit)
	}
	if strings.Contains(unit, "{{") {
		t.Errorf("kardianos/service would read %q as a template action", "{{")
	}
}

func TestSystemdExecStartQuoting(t *testing.T) {
	// Each want is what systemd.service(5) reads back as the given words:
	// quotes around blanks, backslash before " and \, %% and $$ for literal
	// specifiers and dollars, quoted or not.
	tests := []struct {
		name            string
		exe, home, addr string
		want            string
	}{
		{"space in binary path", "/opt/sub pool/subpool", "/h", "127.0.0.1:8787",
			`ExecStart="/opt/sub pool/subpool" serve --home /h --listen 127.0.0.1:8787`},
		{"percent and dollar", "/usr/bin/subpool", "/home/me/100%$HOME", "127.0.0.1:8787",
			`ExecStart=/usr/bin/subpool serve --home /home/me/100%%$$HOME --listen 127.0.0.1:8787`},
		{"quote and backslash", "/usr/bin/subpool", `/home/me/a"b\c`, "127.0.0.1:8787",
			`ExecStart=/usr/bin/subpool serve --home "/home/me/a\"b\\c" --listen 127.0.0.1:8787`},
		{"IPv6 listen", "/usr/bin/subpool", "/h", "[::1]:8787",
			`ExecStart=/usr/bin/subpool serve --home /h --listen "[::1]:8787"`},
		{"semicolon word", "/usr/bin/subpool", "/h;x", "127.0.0.1:1",
			`ExecStart=/usr/bin/subpool serve --home "/h;x" --listen 127.0.0.1:1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := unixConfig()
			cfg.Executable, cfg.Home, cfg.Listen = tt.exe, tt.home, tt.addr
			if got := lines(RenderSystemdUnit(cfg)); !slices.Contains(got, tt.want) {
				t.Errorf("want line %s in\n%s", tt.want, strings.Join(got, "\n"))
			}
		})
	}
}

// decodePlist reads a plist's top-level dict into Go values: string, bool,
// []string (arrays of strings) or map[string]any (nested dicts).
func decodePlist(t *testing.T, doc string) map[string]any {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	var stack []map[string]any
	var keys []string
	var arr []string
	inArr := false
	var top map[string]any
	set := func(v any) {
		d := stack[len(stack)-1]
		d[keys[len(keys)-1]] = v
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch e := tok.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "dict":
				d := map[string]any{}
				if len(stack) > 0 {
					set(d)
				}
				stack = append(stack, d)
				keys = append(keys, "")
			case "key":
				var k string
				if err := dec.DecodeElement(&k, &e); err != nil {
					t.Fatal(err)
				}
				keys[len(keys)-1] = k
			case "string":
				var s string
				if err := dec.DecodeElement(&s, &e); err != nil {
					t.Fatal(err)
				}
				if inArr {
					arr = append(arr, s)
				} else {
					set(s)
				}
			case "integer":
				var s string
				if err := dec.DecodeElement(&s, &e); err != nil {
					t.Fatal(err)
				}
				set(s)
			case "true", "false":
				set(e.Name.Local == "true")
			case "array":
				inArr, arr = true, []string{}
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "array":
				set(arr)
				inArr = false
			case "dict":
				top = stack[len(stack)-1]
				stack, keys = stack[:len(stack)-1], keys[:len(keys)-1]
			}
		}
	}
	if top == nil {
		t.Fatalf("no dict in plist:\n%s", doc)
	}
	return top
}

func TestLaunchAgent(t *testing.T) {
	cfg := unixConfig()
	cfg.HomeDir = "/Users/me"
	cfg.Executable = "/Applications/Sub & Pool.app/Contents/MacOS/subpool"
	cfg.Home = "/Users/me/Library/Application Support/subpool <x>"
	doc := RenderLaunchAgent(cfg)
	p := decodePlist(t, doc)

	wantArgs := []string{cfg.Executable, "serve", "--home", cfg.Home, "--listen", "127.0.0.1:8787"}
	if got, _ := p["ProgramArguments"].([]string); !slices.Equal(got, wantArgs) {
		t.Errorf("ProgramArguments = %q, want %q", got, wantArgs)
	}
	if p["Label"] != "subpool" {
		t.Errorf("Label = %v, want subpool", p["Label"])
	}
	if p["RunAtLoad"] != true {
		t.Errorf("RunAtLoad = %v, want true: the agent would not start at login", p["RunAtLoad"])
	}
	keep, _ := p["KeepAlive"].(map[string]any)
	if keep == nil || keep["SuccessfulExit"] != false {
		t.Errorf("KeepAlive = %v, want a restart on failure (SuccessfulExit false)", p["KeepAlive"])
	}
	const log = "/Users/me/Library/Logs/subpool/serve.log"
	if p["StandardOutPath"] != log || p["StandardErrorPath"] != log {
		t.Errorf("logs go to %v and %v, want both %s", p["StandardOutPath"], p["StandardErrorPath"], log)
	}
	if got, ok := plistProgramArguments([]byte(doc)); !ok || !slices.Equal(got, wantArgs) {
		t.Errorf("status reads back %q, want %q", got, wantArgs)
	}
}

func TestTrayLaunchAgent(t *testing.T) {
	cfg := unixConfig()
	cfg.HomeDir = "/Users/me"
	cfg.TrayArgs = []string{"tray", "--home", "/Users/me/other home"}
	p := decodePlist(t, RenderTrayLaunchAgent(cfg))

	if p["Label"] != "subpool.tray" {
		t.Errorf("Label = %v, want subpool.tray (the serve agent owns subpool)", p["Label"])
	}
	want := []string{"/usr/local/bin/subpool", "tray", "--home", "/Users/me/other home"}
	if got, _ := p["ProgramArguments"].([]string); !slices.Equal(got, want) {
		t.Errorf("ProgramArguments = %q, want %q", got, want)
	}
	if p["RunAtLoad"] != true || p["KeepAlive"] != false {
		t.Errorf("RunAtLoad=%v KeepAlive=%v, want true and false (a quit tray stays quit)", p["RunAtLoad"], p["KeepAlive"])
	}
	if p["LimitLoadToSessionType"] != "Aqua" {
		t.Errorf("LimitLoadToSessionType = %v, want Aqua", p["LimitLoadToSessionType"])
	}
	if p["StandardErrorPath"] != "/Users/me/Library/Logs/subpool/tray.log" {
		t.Errorf("StandardErrorPath = %v", p["StandardErrorPath"])
	}
}

func TestXDGAutostart(t *testing.T) {
	tests := []struct {
		name    string
		exe     string
		args    []string
		exec    string
		tryExec string
	}{
		{"plain", "/usr/bin/subpool", nil, "Exec=/usr/bin/subpool", "TryExec=/usr/bin/subpool"},
		{"space", "/opt/sub pool/subpool", nil, `Exec="/opt/sub pool/subpool"`, "TryExec=/opt/sub pool/subpool"},
		// The spec applies string escaping after quoting: a literal
		// backslash in a quoted argument is four backslashes, a dollar \\$.
		{"backslash", `/opt/a\b/subpool`, nil, `Exec="/opt/a\\\\b/subpool"`, `TryExec=/opt/a\\b/subpool`},
		{"dollar", "/opt/$x/subpool", nil, `Exec="/opt/\\$x/subpool"`, "TryExec=/opt/$x/subpool"},
		{"percent is a field code", "/opt/100%/subpool", nil, "Exec=/opt/100%%/subpool", "TryExec=/opt/100%/subpool"},
		{"tray args", "/usr/bin/subpool", []string{"tray", "--home", "/home/me/my home"},
			`Exec=/usr/bin/subpool tray --home "/home/me/my home"`, "TryExec=/usr/bin/subpool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := unixConfig()
			cfg.Executable, cfg.TrayArgs = tt.exe, tt.args
			entry := RenderXDGAutostart(cfg)
			got := lines(entry)
			for _, want := range []string{"[Desktop Entry]", "Type=Application", tt.exec, tt.tryExec} {
				if !slices.Contains(got, want) {
					t.Errorf("entry lacks line %s:\n%s", want, entry)
				}
			}
		})
	}
}

func TestRunKeyValue(t *testing.T) {
	tests := []struct {
		name string
		exe  string
		args []string
		want string
	}{
		{"bare tray", `C:\Program Files\subpool\subpool.exe`, nil, `"C:\Program Files\subpool\subpool.exe"`},
		{"no space is still quoted", `C:\subpool\subpool.exe`, nil, `"C:\subpool\subpool.exe"`},
		// CommandLineToArgvW: backslashes are literal except before a quote,
		// so a trailing one inside quotes is doubled.
		{"home with space and trailing backslash", `C:\subpool.exe`, []string{"--home", `C:\Users\me\sub pool\`},
			`"C:\subpool.exe" --home "C:\Users\me\sub pool\\"`},
		{"quote in argument", `C:\subpool.exe`, []string{`a"b`}, `"C:\subpool.exe" "a\"b"`},
		{"plain backslashes stay", `C:\subpool.exe`, []string{`C:\x\y`}, `"C:\subpool.exe" C:\x\y`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Name: "subpool", Executable: tt.exe, TrayArgs: tt.args}
			if got := RunKeyValue(cfg); got != tt.want {
				t.Errorf("RunKeyValue = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestInstalledArgsRoundTrip(t *testing.T) {
	// Status reads the installed unit back; whatever Render writes must come
	// back word for word.
	for _, home := range []string{"/plain", "/with space", `/q"uote\back`, "/100%$HOME", "/semi;colon", "/tab\there"} {
		cfg := unixConfig()
		cfg.Home = home
		want := append([]string{cfg.Executable}, serveArgs(cfg)...)
		var execStart string
		for l := range strings.Lines(RenderSystemdUnit(cfg)) {
			if s, ok := strings.CutPrefix(strings.TrimSpace(l), "ExecStart="); ok {
				execStart = s
			}
		}
		got, ok := splitSystemdWords(execStart)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("home %q: read back %q from %s, want %q", home, got, execStart, want)
		}
		if got, ok := plistProgramArguments([]byte(RenderLaunchAgent(cfg))); !ok || !slices.Equal(got, want) {
			t.Errorf("home %q: plist read back %q, want %q", home, got, want)
		}
	}
	if _, ok := splitSystemdWords(`"unterminated`); ok {
		t.Error("an unterminated quote was accepted")
	}
	if _, ok := plistProgramArguments(bytes.Repeat([]byte("<"), 3)); ok {
		t.Error("garbage was read as a plist")
	}
}
