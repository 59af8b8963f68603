package app

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/sim"
	"golang.org/x/sys/unix"
)

// openPTY is a pseudo-terminal: the side a person types into (master)
// and the one a program reads as its terminal (tty).
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err) // a container without /dev/pts
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// On a terminal add-key asks for the key and reads it with echo off (it
// refused, asking for a pipe); the key never shows on the terminal, and
// the terminal's echo is back afterwards.
func TestAddKeyAsksOnATerminal(t *testing.T) {
	master, tty := openPTY(t)
	defer master.Close()
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	var out bytes.Buffer
	errR, errW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"add-key", "anthropic", "--label", "typed", "--home", home}, tty, &out, errW)
		errW.Close()
	}()
	// The prompt is written once echo is off: only then may the person type.
	prompt := make([]byte, len("anthropic API key (not shown): "))
	if _, err := io.ReadFull(errR, prompt); err != nil || string(prompt) != "anthropic API key (not shown): " {
		t.Fatalf("no prompt: %q %v", prompt, err)
	}
	go io.Copy(io.Discard, errR)
	io.WriteString(master, "sk-ant-typed-0123456789\n")
	if code := <-done; code != 0 || !strings.Contains(out.String(), "added anthropic-") {
		t.Fatalf("add-key on a terminal: %d %q", code, out.String())
	}
	st, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil || st.Lflag&unix.ECHO == 0 {
		t.Errorf("the terminal's echo was not given back: %v", err)
	}
	tty.Close()
	shown, _ := io.ReadAll(master) // ends with EIO once the tty side is closed
	if strings.Contains(string(shown), "typed-0123456789") {
		t.Fatalf("the key was echoed on the terminal: %q", shown)
	}
}
