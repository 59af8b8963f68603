package admin

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// The write deadline gorilla sets for each frame is kept back while a
// batch is held; whichever was set last must still bound the socket
// writes, as if each had gone to the socket at once.
func TestHeldConnDeadline(t *testing.T) {
	past := time.Now().Add(-time.Second)
	tests := []struct {
		name string
		run  func(c *heldConn) error
		// timeout: the write must fail on the deadline (the pipe has no
		// reader); otherwise it must reach the reader.
		timeout bool
	}{
		{"flush on release", func(c *heldConn) error {
			c.hold()
			c.SetWriteDeadline(past)
			c.Write([]byte("frame"))
			return c.release()
		}, true},
		{"spill while held", func(c *heldConn) error {
			c.hold()
			c.SetWriteDeadline(past)
			_, err := c.Write(make([]byte, heldBuffer+1))
			return err
		}, true},
		{"latest wins", func(c *heldConn) error {
			c.hold()
			c.SetWriteDeadline(past)
			c.Write([]byte("frame"))
			c.SetWriteDeadline(time.Time{})
			c.Write([]byte("frame"))
			return c.release()
		}, false},
		{"empty batch hands its deadline on", func(c *heldConn) error {
			c.hold()
			c.SetWriteDeadline(past)
			c.release()
			_, err := c.Write([]byte("control frame"))
			return err
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			local, peer := net.Pipe()
			defer local.Close()
			defer peer.Close()
			if !tt.timeout {
				go io.Copy(io.Discard, peer)
			}
			done := make(chan error, 1)
			go func() { done <- tt.run(&heldConn{Conn: local}) }()
			select {
			case err := <-done:
				if timedOut := errors.Is(err, os.ErrDeadlineExceeded); timedOut != tt.timeout {
					t.Errorf("err = %v, want a deadline error: %v", err, tt.timeout)
				}
			case <-time.After(hangGuard):
				t.Fatal("write hung: no deadline reached the socket")
			}
		})
	}
}

// hangGuard is admin_test's, for the tests inside the package: it bounds
// a blocking step, and is never what a test asserts.
const hangGuard = 20 * time.Second
