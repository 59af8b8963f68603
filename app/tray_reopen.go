package app

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Without a tray icon, the panel's window is the only way in, and closing
// it only hides it (the proxy keeps serving). Running `subpool` again
// brings it back: the running tray listens on a socket in its home, and a
// second tray on the same home asks it there instead of starting another.

// reopenSocket is where a running tray without an icon listens.
func reopenSocket(home string) string { return filepath.Join(home, "panel.sock") }

// reopenAsk asks the tray running on home to show its window, and reports
// whether one did.
func reopenAsk(home string) bool {
	c, err := net.DialTimeout("unix", reopenSocket(home), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("show\n")); err != nil {
		return false
	}
	ok, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && ok == "ok\n"
}

// reopenListen listens on home's socket and sends on the channel it returns
// each time another tray asks; stop closes the socket. A socket left by a
// tray that died is replaced.
func reopenListen(home string) (asks <-chan struct{}, stop func(), err error) {
	path := reopenSocket(home)
	if reopenAsk(home) {
		return nil, nil, errors.New("another subpool already shows its panel for " + home)
	}
	os.Remove(path) // nobody answered on it: a leftover
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil { // the person's own trays only
		l.Close()
		return nil, nil, err
	}
	ch := make(chan struct{}, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go answerReopen(c, ch)
		}
	}()
	return ch, func() { l.Close() }, nil
}

func answerReopen(c net.Conn, ch chan<- struct{}) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "show\n" {
		return
	}
	select {
	case ch <- struct{}{}:
	default: // a show is already due
	}
	c.Write([]byte("ok\n"))
}
