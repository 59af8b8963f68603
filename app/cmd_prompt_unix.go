//go:build linux || darwin || freebsd || netbsd || openbsd

package app

import (
	"bufio"
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal (add-key then asks for the
// key instead of reading a pipe).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// readHidden reads one line from the terminal f with echo off, so the key
// never shows on the screen or in a recording of it; prompt runs once echo
// is off, so nothing typed after it can show.
func readHidden(f *os.File, prompt func()) (string, error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return "", err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &quiet); err != nil {
		return "", err
	}
	defer unix.IoctlSetTermios(fd, ioctlSetTermios, old)
	prompt()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	return line, nil
}
