package app

import (
	"github.com/subpool/subpool/internal/freeport"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestX11Addrs(t *testing.T) {
	dir := "/tmp/.X11-unix"
	local := func(n string) []string {
		p := dir + "/X" + n
		if runtime.GOOS == "linux" {
			return []string{"@" + p, p} // Xlib tries the abstract socket first
		}
		return []string{p}
	}
	for _, tc := range []struct {
		display, network string
		addrs            []string
		ok               bool
	}{
		{":0", "unix", local("0"), true},
		{":99.0", "unix", local("99"), true},
		{"unix:1", "unix", local("1"), true},
		{"unix/:2", "unix", local("2"), true},
		{"localhost:10.0", "tcp", []string{"localhost:6010"}, true}, // ssh -X
		{"tcp/:3", "tcp", []string{"localhost:6003"}, true},
		{"[::1]:4", "tcp", []string{"[::1]:6004"}, true},
		{"/private/tmp/com.apple.launchd.x/org.xquartz:0", "unix", []string{"/private/tmp/com.apple.launchd.x/org.xquartz"}, true},
		{"host::0", "", nil, false}, // DECnet: left to GLFW
		{"nonsense", "", nil, false},
		{":x", "", nil, false},
	} {
		network, addrs, ok := x11Addrs(tc.display)
		if network != tc.network || !slices.Equal(addrs, tc.addrs) || ok != tc.ok {
			t.Errorf("%q: %s %q %v, want %s %q %v", tc.display, network, addrs, ok, tc.network, tc.addrs, tc.ok)
		}
	}
}

// emptyX11Dir points x11SocketDir at a folder with no server in it.
func emptyX11Dir(t *testing.T) string {
	dir := t.TempDir()
	old := x11SocketDir
	x11SocketDir = dir
	t.Cleanup(func() { x11SocketDir = old })
	return dir
}

func TestDisplayProblemLooksForTheServer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("displays are looked for on Linux and the BSDs")
	}
	if waylandTray {
		t.Skip("built for Wayland")
	}
	dir := emptyX11Dir(t)
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}

	if err := displayProblem(env()); err == nil || !strings.Contains(err.Error(), "DISPLAY is not set") {
		t.Errorf("no DISPLAY: %v", err)
	}
	if err := displayProblem(env("WAYLAND_DISPLAY", "wayland-0")); err == nil || !strings.Contains(err.Error(), "XWayland") {
		t.Errorf("Wayland without XWayland: %v", err)
	}
	err := displayProblem(env("DISPLAY", ":7"))
	if err == nil || !strings.Contains(err.Error(), ":7") || !strings.Contains(err.Error(), filepath.Join(dir, "X7")) {
		t.Errorf("no server on :7: %v", err)
	}

	// A server listening on the socket: the tray may go ahead.
	ln, err := net.Listen("unix", filepath.Join(dir, "X7"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := displayProblem(env("DISPLAY", ":7.0")); err != nil {
		t.Errorf("server on :7: %v", err)
	}

	// Over TCP, as ssh -X forwards it: port 6000+N.
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := tl.Addr().(*net.TCPAddr).Port
	if port <= 6000 {
		tl.Close()
		t.Skipf("port %d is below the X range", port)
	}
	d := "127.0.0.1:" + strconv.Itoa(port-6000)
	if err := displayProblem(env("DISPLAY", d)); err != nil {
		t.Errorf("server on %s: %v", d, err)
	}
	tl.Close()
	if err := displayProblem(env("DISPLAY", d)); err == nil {
		t.Errorf("%s after its server closed: no problem found", d)
	}
}

func TestWaylandProblem(t *testing.T) {
	dir := t.TempDir()
	if err := waylandProblem("", dir); err == nil {
		t.Error("no WAYLAND_DISPLAY: no problem found")
	}
	if err := waylandProblem("wayland-1", dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "wayland-1")) {
		t.Errorf("no compositor: %v", err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "wayland-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := waylandProblem("wayland-1", dir); err != nil {
		t.Errorf("compositor listening: %v", err)
	}
	if err := waylandProblem(filepath.Join(dir, "wayland-1"), "/nowhere"); err != nil {
		t.Errorf("absolute WAYLAND_DISPLAY: %v", err)
	}
}

// TestTrayHelperProcess is `subpool` itself when run by the tests below,
// so what they see is a whole process: its exit code and everything it
// printed, a panic's stack trace included.
func TestTrayHelperProcess(t *testing.T) {
	if os.Getenv("SUBPOOL_TRAY_HELPER") != "1" {
		return
	}
	x11SocketDir = os.Getenv("SUBPOOL_TRAY_HELPER_X11")
	var args []string
	if a := os.Getenv("SUBPOOL_TRAY_HELPER_ARGS"); a != "" {
		args = strings.Fields(a)
	}
	os.Exit(run(args, os.Stdin, os.Stdout, os.Stderr))
}

// runSubpool runs the test binary as `subpool args...` with env.
func runSubpool(t *testing.T, args string, env ...string) (code int, out string) {
	t.Helper()
	home := t.TempDir()
	cfg := "listen = \"" + freeport.Addr(t) + "\"\n[keychain]\nbackend = \"file\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTrayHelperProcess$")
	cmd.Env = append(os.Environ(), "SUBPOOL_TRAY_HELPER=1", "SUBPOOL_TRAY_HELPER_ARGS="+args,
		"SUBPOOL_TRAY_HELPER_X11="+t.TempDir(), "SUBPOOL_HOME="+home, "WAYLAND_DISPLAY=")
	cmd.Env = append(cmd.Env, env...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(b)
		}
		t.Fatal(err)
	}
	return 0, string(b)
}

// Issue 15: with DISPLAY naming a display nobody serves, GLFW used to panic
// with a Go stack trace. `subpool` now says so in one line and exits 1.
// In a build without cgo there is no tray at all, which it says instead.
func TestTrayOnADisplayThatCannotOpen(t *testing.T) {
	if runtime.GOOS != "linux" || waylandTray {
		t.Skip("an X11 display is looked for on Linux")
	}
	code, out := runSubpool(t, "", "DISPLAY=:99")
	want := "cannot open the display :99"
	if !trayBuilt {
		want = "this build has no tray"
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 1 || len(lines) != 1 || !strings.Contains(out, want) || !strings.Contains(out, "subpool serve") {
		t.Errorf("exit %d, %d lines, want 1 and one line saying %q and `subpool serve`:\n%s", code, len(lines), want, out)
	}
	if strings.Contains(out, "goroutine") || strings.Contains(out, "panic") {
		t.Errorf("a stack trace:\n%s", out)
	}
}

// `subpool demo --gui` on a display that cannot open runs the demo
// without the tray, and says why in one line first.
func TestDemoGUIFallsBackWithoutADisplay(t *testing.T) {
	if runtime.GOOS != "linux" || waylandTray {
		t.Skip("an X11 display is looked for on Linux")
	}
	code, out := runSubpool(t, "demo --gui --listen "+freeport.Addr(t)+" --for 300ms --every 1h", "DISPLAY=:99")
	first, _, _ := strings.Cut(out, "\n")
	if code != 0 || !strings.HasPrefix(first, "subpool demo: ") || !strings.Contains(first, "without the tray") {
		t.Errorf("exit %d, first line %q; want 0 and the reason the tray is not shown:\n%s", code, first, out)
	}
	if !strings.Contains(out, "subpool demo on http://") {
		t.Errorf("the headless demo did not run:\n%s", out)
	}
	if strings.Contains(out, "goroutine") || strings.Contains(out, "panic") {
		t.Errorf("a stack trace:\n%s", out)
	}
}
