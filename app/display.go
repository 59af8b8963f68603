package app

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// x11SocketDir is where X servers put their local sockets; tests point it
// at an empty folder so that ":99" surely has no server.
var x11SocketDir = "/tmp/.X11-unix"

// displayDialTimeout bounds the look at a remote display (ssh -X forwards
// localhost:10); a local socket answers or refuses at once.
const displayDialTimeout = 3 * time.Second

// displayProblem says why the tray could not open a window here, or nil.
// GLFW, under Fyne, logs and then panics with a Go stack trace when it
// cannot open the display (issue 15), so we look first: the display's
// socket must accept a connection. A server that accepts and then refuses
// our credentials is not caught; that needs a whole X handshake.
//
// Only Linux and the BSDs have a display to find; macOS and Windows always
// have their own window system.
func displayProblem(getenv func(string) string) error {
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
	default:
		return nil
	}
	if waylandTray {
		return waylandProblem(getenv("WAYLAND_DISPLAY"), getenv("XDG_RUNTIME_DIR"))
	}
	d := getenv("DISPLAY")
	if d == "" {
		if getenv("WAYLAND_DISPLAY") != "" {
			// Fyne's default GLFW speaks X11 only; XWayland sets DISPLAY.
			return errors.New("no X display: DISPLAY is not set (the tray needs X11 or XWayland)")
		}
		return errors.New("no display found (DISPLAY is not set)")
	}
	network, addrs, ok := x11Addrs(d)
	if !ok {
		return nil // a form we do not know: let GLFW judge it
	}
	var err error
	for _, a := range addrs {
		var c net.Conn
		if c, err = net.DialTimeout(network, a, displayDialTimeout); err == nil {
			c.Close()
			return nil
		}
	}
	return fmt.Errorf("cannot open the display %s (no X server answers at %s)", d, addrs[len(addrs)-1])
}

// x11Addrs turns a DISPLAY value ([proto/][host]:N[.S], as Xlib reads it)
// into where its server listens: a local socket (on Linux the abstract one
// first, as Xlib tries it) or TCP port 6000+N. ok is false for a form it
// does not know (DECnet's "host::N").
func x11Addrs(d string) (network string, addrs []string, ok bool) {
	if strings.HasPrefix(d, "/") {
		// macOS launchd: the socket's own path, then ":N".
		i := strings.LastIndex(d, ":")
		if i <= 0 {
			return "", nil, false
		}
		return "unix", []string{d[:i]}, true
	}
	proto := ""
	if i := strings.Index(d, "/"); i >= 0 {
		proto, d = d[:i], d[i+1:]
	}
	i := strings.LastIndex(d, ":")
	if i < 0 {
		return "", nil, false
	}
	host, num := d[:i], d[i+1:]
	if strings.HasSuffix(host, ":") {
		return "", nil, false
	}
	num, _, _ = strings.Cut(num, ".")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return "", nil, false
	}
	if proto == "unix" || (proto == "" && (host == "" || host == "unix")) {
		path := filepath.Join(x11SocketDir, "X"+strconv.Itoa(n))
		if runtime.GOOS == "linux" {
			return "unix", []string{"@" + path, path}, true
		}
		return "unix", []string{path}, true
	}
	if n > 65535-6000 {
		return "", nil, false
	}
	if host == "" {
		host = "localhost" // "tcp/:0"
	}
	return "tcp", []string{net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(6000+n))}, true
}

// waylandProblem is displayProblem for a tray built with -tags wayland.
func waylandProblem(display, runtimeDir string) error {
	if display == "" {
		return errors.New("no Wayland display found (WAYLAND_DISPLAY is not set)")
	}
	path := display
	if !filepath.IsAbs(path) {
		path = filepath.Join(runtimeDir, display)
	}
	c, err := net.DialTimeout("unix", path, displayDialTimeout)
	if err != nil {
		return fmt.Errorf("cannot open the Wayland display %s (no compositor answers at %s)", display, path)
	}
	c.Close()
	return nil
}
