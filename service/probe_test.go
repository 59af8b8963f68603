package service

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestDialProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	if !dialProbe(addr) {
		t.Errorf("nothing answers on %s, where a listener is", addr)
	}
	// A service told to listen on all interfaces answers on loopback too.
	if !dialProbe(net.JoinHostPort("0.0.0.0", port)) || !dialProbe(":"+port) {
		t.Errorf("unspecified host with port %s is not dialled on loopback", port)
	}
	ln.Close()
	if dialProbe(addr) {
		t.Errorf("something answers on %s after the listener closed", addr)
	}
	if dialProbe("no-port") {
		t.Error("an address without a port answered")
	}
}

func TestDefaultExecutablePrefersTheNameItWasStartedUnder(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "subpool")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("not this binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	saved := os.Args[0]
	t.Cleanup(func() { os.Args[0] = saved })

	os.Args[0] = link
	if got, _ := DefaultExecutable(); got != link {
		t.Errorf("started as %s: DefaultExecutable = %s, want the link, which outlives an upgrade", link, got)
	}
	os.Args[0] = other
	if got, _ := DefaultExecutable(); got == other {
		t.Errorf("started under a name that is another file, DefaultExecutable trusted it: %s", got)
	}
}
